import { resolve } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, type RunResult } from "@assemblyline-agents/runtime";
import { parseCommand, requirePositional, stringOption } from "../args.js";
import type { CommandIO } from "../io.js";
import { formatEvent } from "../timeline.js";

const USAGE = 'assembly-line run <agentDir> --message "..." [--model <spec>] [--approve all|none] [--answer "..."] [--conversation <id>] [--json]';

export async function runCommand(args: string[], io: CommandIO): Promise<number> {
  const parsed = parseCommand(
    args,
    {
      message: { type: "string", short: "m" },
      model: { type: "string" },
      approve: { type: "string" },
      answer: { type: "string" },
      conversation: { type: "string" },
      json: { type: "boolean" },
    },
    USAGE,
  );
  const values = {
    message: stringOption(parsed, "message"),
    model: stringOption(parsed, "model"),
    approve: stringOption(parsed, "approve"),
    answer: stringOption(parsed, "answer"),
    conversation: stringOption(parsed, "conversation"),
    json: parsed.values.json === true,
  };
  const dir = requirePositional(parsed.positionals, 0, "agentDir", USAGE);
  if (values.message === undefined) throw new AssemblyLineError("AL_ERR_CLI_USAGE", "missing --message", { fix: `usage: ${USAGE}` });
  if (values.approve !== undefined && values.approve !== "all" && values.approve !== "none") {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--approve ${values.approve} is not all or none`, { fix: `usage: ${USAGE}` });
  }
  const json = values.json;
  const { artifactRoot } = await buildAgent(dir);
  const bundle = await loadRuntimeBundle(artifactRoot);
  const runtime = new OpenEveRuntime({
    ...bundle,
    state: new InMemoryStateAdapter(),
    onTextDelta: () => undefined,
  });
  runtime.hooks.event.tap("cli-timeline", (event) => {
    io.out(json ? JSON.stringify(event) : formatEvent(event));
  });
  if (!json) io.out(`${bundle.manifest.agent.id} ${bundle.manifest.agentRevision}`);
  const model = values.model?.startsWith("scripted:") ? `scripted:${resolve(values.model.slice("scripted:".length))}` : values.model;

  let result = await runtime.run({
    message: values.message,
    ...(model ? { model } : {}),
    ...(values.conversation ? { conversationId: values.conversation } : {}),
  });
  for (;;) {
    if (result.status === "waiting_approval" && values.approve) {
      const [pending] = result.pendingApprovals ?? [];
      result = values.approve === "all"
        ? await runtime.approve(result.runId, { callId: pending!.callId, actor: "cli" })
        : await runtime.deny(result.runId, { callId: pending!.callId, actor: "cli" });
    } else if (result.status === "waiting_input" && values.answer !== undefined) {
      result = await runtime.answer(result.runId, values.answer, { actor: "cli" });
    } else break;
  }
  await runtime.close();
  return report(result, io, json);
}

function report(result: RunResult, io: CommandIO, json: boolean): number {
  if (json) {
    io.out(JSON.stringify({ result }));
    return result.status === "failed" ? 1 : 0;
  }
  switch (result.status) {
    case "completed":
      io.out(`\n${result.response?.text ?? ""}`);
      return 0;
    case "failed":
      io.err(`\nrun ${result.runId} failed: ${result.error?.message ?? "unknown error"}`);
      return 1;
    case "waiting_approval":
      for (const pending of result.pendingApprovals ?? []) {
        io.out(`\nwaiting for approval: ${pending.toolName} ${JSON.stringify(pending.input)} (call ${pending.callId})`);
      }
      io.out("rerun with --approve all or --approve none to decide");
      return 0;
    case "waiting_input":
      io.out(`\nwaiting for an answer: ${JSON.stringify(result.question?.question ?? null)}`);
      io.out('rerun with --answer "..." to answer');
      return 0;
    default:
      io.out(`\nrun ${result.runId} is ${result.status}`);
      return 0;
  }
}
