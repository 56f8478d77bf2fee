import { AssemblyLineError } from "@assemblyline-agents/core";
import type { RunResult } from "@assemblyline-agents/runtime";
import { parseCommand, requirePositional, stringOption } from "../args.js";
import type { CommandIO } from "../io.js";
import { MODEL_OPTIONS, catalogFor, chooseModel, openLocalRuntime } from "../local-runtime.js";
import { reportResult } from "../report.js";
import { formatEvent } from "../timeline.js";

const USAGE =
  'assembly-line run <agentDir> --message "..." [--model <spec>] [--base-url <url>] [--api <api>] [--offline-script <file.json>] [--approve all|none] [--answer "..."] [--conversation <id>] [--state-dir <dir>] [--stream] [--json]';

export async function runCommand(args: string[], io: CommandIO): Promise<number> {
  const parsed = parseCommand(
    args,
    {
      message: { type: "string", short: "m" },
      ...MODEL_OPTIONS,
      "offline-script": { type: "string" },
      approve: { type: "string" },
      answer: { type: "string" },
      conversation: { type: "string" },
      "state-dir": { type: "string" },
      stream: { type: "boolean" },
      json: { type: "boolean" },
    },
    USAGE,
  );
  const agentDir = requirePositional(parsed.positionals, 0, "agentDir", USAGE);
  const message = stringOption(parsed, "message");
  if (message === undefined) throw new AssemblyLineError("AL_ERR_CLI_USAGE", "missing --message", { fix: `usage: ${USAGE}` });
  const approve = stringOption(parsed, "approve");
  if (approve !== undefined && approve !== "all" && approve !== "none") {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--approve ${approve} is not all or none`, { fix: `usage: ${USAGE}` });
  }
  const answer = stringOption(parsed, "answer");
  const json = parsed.values.json === true;
  const flags = { model: stringOption(parsed, "model"), baseUrl: stringOption(parsed, "base-url"), api: stringOption(parsed, "api") };
  const models = await catalogFor(flags);
  const stateDir = stringOption(parsed, "state-dir");

  const local = await openLocalRuntime({
    agentDir,
    build: true,
    ...(stateDir ? { stateDir } : {}),
    ...(models ? { models } : {}),
    onEvent: (event) => io.out(json ? JSON.stringify(event) : formatEvent(event)),
    // Deltas are not durable: shown as they arrive, while the timeline shows the completed message.
    ...(parsed.values.stream === true ? { onTextDelta: (_runId: string, delta: string) => io.err(`  > ${delta}`) } : {}),
  });
  try {
    const { model, note } = await chooseModel(local.bundle.manifest.agent.model, { ...flags, offlineScript: stringOption(parsed, "offline-script") });
    if (!json) io.out(`${local.bundle.manifest.agent.id} ${local.bundle.manifest.agentRevision}, ${note}`);
    const conversationId = stringOption(parsed, "conversation");
    let result: RunResult = await local.runtime.run({ message, ...(model ? { model } : {}), ...(conversationId ? { conversationId } : {}) });
    for (;;) {
      const pending = result.pendingApprovals?.[0];
      if (result.status === "waiting_approval" && approve && pending) {
        result =
          approve === "all"
            ? await local.runtime.approve(result.runId, { callId: pending.callId, actor: "cli" })
            : await local.runtime.deny(result.runId, { callId: pending.callId, actor: "cli" });
      } else if (result.status === "waiting_input" && answer !== undefined) {
        result = await local.runtime.answer(result.runId, answer, { actor: "cli" });
      } else break;
    }
    return reportResult(result, io, { json, agentDir });
  } finally {
    await local.close();
  }
}
