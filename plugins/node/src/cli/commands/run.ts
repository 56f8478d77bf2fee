import { AssemblyLineError, type RunEvent } from "@assemblyline-agents/core";
import type { RunResult } from "@assemblyline-agents/runtime";
import { jsonOption, requirePositional, requireText, stringOption, type ParsedCommand } from "../args.js";
import type { CommandIO } from "../io.js";
import { commandLogger } from "../command-logger.js";
import { catalogFor, chooseModel, openLocalRuntime } from "../local-runtime.js";
import { checkModelSpec, checkOfflineScript, modelFlagsOf } from "../model-flags.js";
import { progress } from "../output.js";
import { continuedWith, reportResult } from "../report.js";
import { stateDirOption } from "../state-dir.js";
import { formatEvent } from "../timeline.js";
import { driveUntilSignal } from "../interrupt.js";

const USAGE = 'assembly-line run [agentDir] --message "..." (assembly-line run --help)';

/** `assembly-line run`: one conversation turn, its timeline as it happens, and how it ended. */
export async function runCommand(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const agentDir = requirePositional(parsed.positionals, 0, "agentDir", USAGE);
  const message = requireText(stringOption(parsed, "message")!, "--message", 'Give the user message the run starts with, e.g. -m "Remember to buy milk".', USAGE);
  const approve = stringOption(parsed, "approve");
  const answerText = stringOption(parsed, "answer");
  const answer = answerText === undefined ? undefined : requireText(answerText, "--answer", 'Give the text that answers the question the run asks, or leave --answer out to let the run pause for `assembly-line answer`.', USAGE);
  const conversationText = stringOption(parsed, "conversation");
  // An empty id (a shell variable that was not set) is refused rather than read as none, which would start a new conversation without its history.
  const conversationId = conversationText === undefined ? undefined : requireText(conversationText, "--conversation", "Give the id of the conversation to continue, or leave --conversation out to start a new one.", USAGE);
  const json = jsonOption(parsed);
  // Everything the command line chose is checked before the build and before any run is created.
  const flags = modelFlagsOf(parsed);
  // --base-url without --model serves agent.ts's model: its entry is made once the build has read agent.ts.
  if (flags.model !== undefined) await checkModelSpec(flags.model, await catalogFor(flags, undefined));
  const offlineScript = stringOption(parsed, "offline-script");
  checkOfflineScript(offlineScript, parsed);
  const stateDir = stateDirOption(parsed, { mustExist: false, usage: USAGE });
  const events: RunEvent[] = [];
  // The run this command drives, from its first event: what a Ctrl-C before run() returns reports.
  let runId: string | undefined;
  // Deltas are not durable: written as they arrive, while the timeline shows the completed message.
  let streaming = false;
  const endStream = () => {
    if (streaming) (io.errChunk ?? io.err)("\n");
    streaming = false;
  };

  const logger = commandLogger(io, json);
  progress(io, json)(`building ${agentDir}`);
  const local = await openLocalRuntime({
    agentDir,
    build: true,
    checkAgentModel: flags.model === undefined,
    ...(logger ? { logger } : {}),
    ...(stateDir ? { stateDir } : {}),
    models: (agentModel: string) => catalogFor(flags, agentModel),
    onEvent: (event) => {
      runId ??= event.runId;
      if (json) return void events.push(event);
      endStream();
      io.out(formatEvent(event));
    },
    ...(parsed.values.stream === true
      ? {
          onTextDelta: (_runId: string, delta: string) => {
            streaming = true;
            (io.errChunk ?? io.err)(delta);
          },
          // The reply broke off and is asked for again: what was shown of it is not the reply.
          onTextRestart: () => {
            if (streaming) (io.errChunk ?? io.err)("\n[the provider broke off; asking again]\n");
          },
        }
      : {}),
  });
  try {
    const { model, note } = await chooseModel(local.bundle.manifest.agent.model, { ...flags, ...(offlineScript !== undefined ? { offlineScript } : {}) });
    if (!json) io.out(`${local.bundle.manifest.agent.id} ${local.bundle.manifest.agentRevision}, ${note}`);
    const drive = async (): Promise<RunResult> => {
      let result: RunResult = await local.runtime.run({ message, ...(model ? { model } : {}), ...(conversationId !== undefined ? { conversationId } : {}) });
      // --approve decides every approval pause; --answer answers one question, the first: a later one is
      // another question, which the text written for the first does not answer, and the run pauses on it.
      let answered = false;
      for (;;) {
        const pending = result.pendingApprovals?.[0];
        if (result.status === "waiting_approval" && approve && pending) {
          // With its run: two subagents waiting at once can each have a call of that id.
          const named = { callId: pending.callId, ...(pending.runId ? { runId: pending.runId } : {}), actor: "cli" };
          result = approve === "all" ? await local.runtime.approve(result.runId, named) : await local.runtime.deny(result.runId, named);
        } else if (result.status === "waiting_input" && answer !== undefined && !answered) {
          answered = true;
          const callId = result.question?.callId;
          const questionRunId = result.question?.runId;
          result = await local.runtime.answer(result.runId, answer, { ...(callId ? { callId } : {}), ...(questionRunId ? { runId: questionRunId } : {}), actor: "cli" });
        } else break;
      }
      return result;
    };
    const { result } = await driveUntilSignal(drive(), () => runId, local.runtime, io);
    endStream();
    return reportResult(result, io, { json, agentDir, ...continuedWith(parsed), events });
  } finally {
    await local.close();
  }
}
