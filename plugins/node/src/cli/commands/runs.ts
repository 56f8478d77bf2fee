import { AssemblyLineError, type RunStatus } from "@assemblyline-agents/core";
import type { RunResult } from "@assemblyline-agents/runtime";
import { parseCommand, requirePositional, stringOption, type ParsedCommand } from "../args.js";
import type { CommandIO } from "../io.js";
import { MODEL_OPTIONS, catalogFor, openLocalRuntime, type LocalRuntime } from "../local-runtime.js";
import { reportResult } from "../report.js";
import { formatEvent } from "../timeline.js";

const COMMON = { agent: { type: "string" }, "state-dir": { type: "string" }, json: { type: "boolean" }, ...MODEL_OPTIONS } as const;
const STATUSES: RunStatus[] = ["queued", "running", "waiting_approval", "waiting_input", "completed", "failed"];

async function open(parsed: ParsedCommand, io: CommandIO, printEvents: boolean): Promise<LocalRuntime & { agentDir: string; json: boolean }> {
  const agentDir = stringOption(parsed, "agent") ?? ".";
  const json = parsed.values.json === true;
  const stateDir = stringOption(parsed, "state-dir");
  const models = await catalogFor({ model: stringOption(parsed, "model"), baseUrl: stringOption(parsed, "base-url"), api: stringOption(parsed, "api") });
  const local = await openLocalRuntime({
    agentDir,
    build: false,
    ...(stateDir ? { stateDir } : {}),
    ...(models ? { models } : {}),
    ...(printEvents ? { onEvent: (event) => io.out(json ? JSON.stringify(event) : formatEvent(event)) } : {}),
  });
  return { ...local, agentDir, json };
}

/** `runs list` and `runs show <id>`. */
export async function runsCommand(args: string[], io: CommandIO): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "list") {
    const usage = "assembly-line runs list [--agent <dir>] [--status <status>] [--limit <n>] [--json]";
    const parsed = parseCommand(rest, { ...COMMON, status: { type: "string" }, limit: { type: "string" } }, usage);
    const status = stringOption(parsed, "status") as RunStatus | undefined;
    if (status && !STATUSES.includes(status)) throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--status ${status} is not one of ${STATUSES.join(", ")}`, { fix: `usage: ${usage}` });
    const limit = Number(stringOption(parsed, "limit") ?? 20);
    if (!Number.isInteger(limit) || limit < 1) throw new AssemblyLineError("AL_ERR_CLI_USAGE", "--limit must be a positive integer", { fix: `usage: ${usage}` });
    const local = await open(parsed, io, false);
    try {
      const page = await local.runtime.state.runs.listRuns({ ...(status ? { status } : {}), limit });
      if (local.json) for (const run of page.runs) io.out(JSON.stringify(run));
      else {
        for (const run of page.runs) {
          const revision = await local.runtime.revisionOf(run.id);
          const pinned = revision === local.runtime.manifest.agentRevision ? revision : `${revision} (earlier build)`;
          io.out(`${run.id}  ${run.status.padEnd(16)} ${pinned}  ${run.createdAt}  ${JSON.stringify(run.input.message).slice(0, 60)}`);
        }
      }
      if (!local.json && page.runs.length === 0) io.out("no runs");
      return 0;
    } finally {
      await local.close();
    }
  }
  if (sub === "show") {
    const usage = "assembly-line runs show <runId> [--agent <dir>] [--json]";
    const parsed = parseCommand(rest, COMMON, usage);
    const runId = requirePositional(parsed.positionals, 0, "runId", usage);
    const local = await open(parsed, io, false);
    try {
      const result = await local.runtime.getRun(runId);
      const events = await local.runtime.listEvents(runId);
      const usage = await local.runtime.state.usage.listUsage({ runId });
      if (local.json) {
        io.out(JSON.stringify({ result, events, toolCalls: await local.runtime.state.runs.listToolCalls(runId), usage }));
        return 0;
      }
      const run = (await local.runtime.state.runs.getRun(runId))!;
      io.out(`run ${run.id}  ${run.status}  revision ${run.agentRevision}  model ${run.modelSpec}`);
      for (const event of events) io.out(formatEvent(event));
      if (usage.length > 0) {
        const total = usage.reduce((sum, record) => ({ input: sum.input + record.inputTokens, output: sum.output + record.outputTokens, cost: sum.cost + record.costUsd }), { input: 0, output: 0, cost: 0 });
        for (const record of usage) io.out(`usage ${record.provider}/${record.model}: ${record.inputTokens} in, ${record.outputTokens} out, ${record.cacheReadTokens} cache read, $${record.costUsd.toFixed(6)}`);
        io.out(`usage total: ${total.input} in, ${total.output} out, $${total.cost.toFixed(6)}`);
      }
      return reportResult(result, io, { json: false, agentDir: local.agentDir });
    } finally {
      await local.close();
    }
  }
  if (sub === "migrate") {
    const usage = "assembly-line runs migrate <runId> --to current [--agent <dir>] [--json]";
    const parsed = parseCommand(rest, { ...COMMON, to: { type: "string" } }, usage);
    const runId = requirePositional(parsed.positionals, 0, "runId", usage);
    if (stringOption(parsed, "to") !== "current") {
      throw new AssemblyLineError("AL_ERR_CLI_USAGE", "runs migrate moves a paused run to the current build only: pass --to current", { fix: `usage: ${usage}` });
    }
    const local = await open(parsed, io, false);
    try {
      const from = await local.runtime.revisionOf(runId);
      const result = await local.runtime.migrateRun(runId, { actor: "cli" });
      if (!local.json) io.out(`run ${runId} moved from ${from} to ${local.runtime.manifest.agentRevision}`);
      return reportResult(result, io, { json: local.json, agentDir: local.agentDir });
    } finally {
      await local.close();
    }
  }
  throw new AssemblyLineError("AL_ERR_CLI_USAGE", `unknown runs subcommand ${JSON.stringify(sub ?? "")}`, { fix: "assembly-line runs list | runs show <runId> | runs migrate <runId> --to current" });
}

type Decision = (local: LocalRuntime, runId: string, parsed: ParsedCommand) => Promise<RunResult>;

function decisionCommand(usage: string, extra: Record<string, { type: "string" | "boolean" }>, decide: Decision) {
  return async (args: string[], io: CommandIO): Promise<number> => {
    const parsed = parseCommand(args, { ...COMMON, ...extra }, usage);
    const runId = requirePositional(parsed.positionals, 0, "runId", usage);
    const local = await open(parsed, io, true);
    try {
      return reportResult(await decide(local, runId, parsed), io, { json: local.json, agentDir: local.agentDir });
    } finally {
      await local.close();
    }
  };
}

export const approveCommand = decisionCommand("assembly-line approve <runId> [<callId>] [--agent <dir>]", {}, (local, runId, parsed) => {
  const callId = parsed.positionals[1];
  return local.runtime.approve(runId, { ...(callId ? { callId } : {}), actor: "cli" });
});

export const denyCommand = decisionCommand("assembly-line deny <runId> [<callId>] [--reason <text>] [--agent <dir>]", { reason: { type: "string" } }, (local, runId, parsed) => {
  const callId = parsed.positionals[1];
  const reason = stringOption(parsed, "reason");
  return local.runtime.deny(runId, { ...(callId ? { callId } : {}), ...(reason ? { reason } : {}), actor: "cli" });
});

export const answerCommand = decisionCommand('assembly-line answer <runId> "text" [--agent <dir>]', {}, (local, runId, parsed) => {
  const text = requirePositional(parsed.positionals, 1, "text", 'assembly-line answer <runId> "text" [--agent <dir>]');
  return local.runtime.answer(runId, text, { actor: "cli" });
});

export const resumeCommand = decisionCommand("assembly-line resume <runId> [--agent <dir>]", {}, (local, runId) => local.runtime.resume(runId));
