import { AssemblyLineError, describeReplayProblems } from "@assemblyline-agents/core";
import { buildAgent, loadRuntimeBundle, replayStress } from "@assemblyline-agents/runtime";
import { jsonOption, requirePositional, stringOption, type ParsedCommand } from "../args.js";
import type { CommandIO } from "../io.js";
import { staticModelCheck } from "../local-runtime.js";
import { checkScriptFile } from "../model-flags.js";
import { envelope, progress } from "../output.js";

const USAGE = 'assembly-line test [agentDir] --conversation <file.json> --replay-stress [--message "..."] [--json]';

/**
 * `test --replay-stress`: record a scripted conversation, then stop it after
 * every durable write and resume it in a fresh runtime, reporting each
 * boundary where the resumed run differs. Exit 0 when none does, 1 otherwise, and 1 when the
 * recorded run itself failed: the conversation did not play through, so nothing it meant was checked.
 */
export async function testCommand(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const agentDir = requirePositional(parsed.positionals, 0, "agentDir", USAGE);
  const conversation = stringOption(parsed, "conversation");
  if (!conversation) throw new AssemblyLineError("AL_ERR_CLI_USAGE", "test needs --conversation <file.json>: the scripted model turns to play", { fix: `usage: ${USAGE}` });
  if (parsed.values["replay-stress"] !== true) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", "test runs in --replay-stress mode: pass --replay-stress", { fix: `usage: ${USAGE}` });
  }
  const json = jsonOption(parsed);
  // Read before the build: a wrong path is refused at once, naming --conversation.
  const script = checkScriptFile(conversation, "--conversation");
  progress(io, json)(`building ${agentDir}`);
  const { artifactRoot } = await buildAgent(agentDir, { validateModel: staticModelCheck(undefined) });
  const report = await replayStress({
    bundle: await loadRuntimeBundle(artifactRoot),
    script,
    message: stringOption(parsed, "message") ?? "replay stress",
    conversationId: "replay-stress",
    onBoundary: (boundary, of, problems) => {
      if (!json) io.out(`boundary ${boundary}/${of}: ${problems.length === 0 ? "ok" : `${problems.length} problem(s)`}`);
    },
  });
  // A run that failed as recorded is not the conversation the script describes: that it fails the same way after each stop says nothing of it.
  const recordedFailed = report.recorded.status === "failed";
  if (json) {
    io.out(envelope(report));
  } else {
    for (const line of describeReplayProblems(report)) io.out(line);
    if (report.problems.length > 0) io.out(`${report.problems.length} problem(s) at ${new Set(report.problems.map((problem) => problem.boundary)).size} of ${report.boundaries - 1} boundaries`);
    if (recordedFailed) {
      const rerun = `assembly-line run ${JSON.stringify(agentDir)} -m ${JSON.stringify(stringOption(parsed, "message") ?? "replay stress")} --model ${JSON.stringify(`scripted:${conversation}`)}`;
      io.err(`the recorded run failed: the conversation did not play through, so it is not checked. See why with \`${rerun}\`.`);
    } else if (report.problems.length === 0) {
      io.out(`replay-safe: the run ended ${report.recorded.status} the same way after a stop at each of its ${report.boundaries - 1} boundaries`);
    }
  }
  return report.problems.length === 0 && !recordedFailed ? 0 : 1;
}
