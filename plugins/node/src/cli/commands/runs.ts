import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { AssemblyLineError, errorSummary, isAssemblyLineError, isRunOfAgent, revisionOfRun, type RunEvent, type RunRecord, type RunStatus, type RunStore } from "@assemblyline-agents/core";
import type { PiModelCatalog } from "@assemblyline-agents/pi";
import type { RunResult } from "@assemblyline-agents/runtime";
import { builtAgentFolder } from "../agent-folder.js";
import { commandLineOption, jsonOption, requirePositional, requireText, stringOption, type ParsedCommand } from "../args.js";
import { commandLogger } from "../command-logger.js";
import type { CommandIO } from "../io.js";
import { envelope } from "../output.js";
import type { LocalRuntime } from "../local-runtime.js";
import { continuedWith, reportResult, runAtFlags } from "../report.js";
import { driveUntilSignal } from "../interrupt.js";
import { stateDirOption } from "../state-dir.js";
import { formatEvent } from "../timeline.js";

const LIST_USAGE = "assembly-line runs list [--agent <dir>] [--state-dir <dir>] (assembly-line runs list --help)";
const SHOW_USAGE = "assembly-line runs show <runId> [--agent <dir>] [--state-dir <dir>]";
const MIGRATE_USAGE = "assembly-line runs migrate <runId> --to current";

/** Options for opening the agent's runtime on existing runs. */
interface OpenOptions {
  /** Print (or, with --json, collect) the events the command sees. */
  events?: RunEvent[];
  usage: string;
  /** The catalog entry that serves a continued run's model (--base-url). */
  models?: PiModelCatalog;
}

async function open(parsed: ParsedCommand, io: CommandIO, options: OpenOptions): Promise<LocalRuntime & { agentDir: string; json: boolean }> {
  const agentDir = builtAgentFolder(parsed, options.usage);
  const json = jsonOption(parsed);
  // Every command here works on runs already kept: a --state-dir that does not exist is refused, not created.
  const stateDir = stateDirOption(parsed, { mustExist: true, usage: options.usage });
  const events = options.events;
  const logger = commandLogger(io, json);
  const { openLocalRuntime } = await import("../local-runtime.js");
  const local = await openLocalRuntime({
    agentDir,
    build: false,
    ...(stateDir ? { stateDir } : {}),
    ...(options.models ? { models: options.models } : {}),
    ...(logger ? { logger } : {}),
    ...(events ? { onEvent: (event) => (json ? events.push(event) : io.out(formatEvent(event))) } : {}),
  });
  return { ...local, agentDir, json };
}

/**
 * The run a command is about to decide, resume or migrate, refused when a --state-dir (or
 * the config's stateDir) holds another agent's runs: this agent's build would continue it.
 * The agent's own state folder holds its own runs only, and is not checked.
 */
async function requireOwnRun(local: LocalRuntime & { agentDir: string }, parsed: ParsedCommand, runId: string): Promise<RunRecord | undefined> {
  const run = await local.runtime.state.runs.getRun(runId);
  const agentId = local.runtime.manifest.agent.id;
  const stateDir = stringOption(parsed, "state-dir");
  if (!run || stateDir === undefined || isRunOfAgent(run, agentId)) return run;
  const named = parsed.configured?.includes("state-dir") ? `the config's stateDir ${stateDir}` : `--state-dir ${stateDir}`;
  throw new AssemblyLineError("AL_ERR_CLI_USAGE", `run ${runId} belongs to agent "${run.agentId}", not to "${agentId}" (${resolve(local.agentDir)}): ${named} keeps another agent's runs`, {
    fix: `Pass the folder of agent "${run.agentId}" as --agent <dir>, or give this agent's own state folder; its build, not this one, continues the run.`,
  });
}

/** The runtime's errors about a run id or a run's state, whose fix names a command to look at the runs. */
const RUN_LOOKUP_ERRORS = new Set<string>(["AL_ERR_RUN_NOT_FOUND", "AL_ERR_RUN_NOT_RESUMABLE", "AL_ERR_APPROVAL_NOT_FOUND"]);

/**
 * The runtime's fix for a run id it does not hold, or a run state it refuses, names
 * `assembly-line runs list` or `assembly-line runs show <id>` bare: rewritten with the run id
 * and the --agent and --state-dir of this command, so followed as printed it looks at the
 * same runs (as the lines reportResult prints do). What the config filled it fills again.
 */
function runsFixedAt(error: unknown, runId: string, parsed: ParsedCommand, agentDir: string): unknown {
  if (!isAssemblyLineError(error) || error.fix === undefined || !RUN_LOOKUP_ERRORS.has(error.code)) return error;
  const at = runAtFlags({ agentDir, stateDir: commandLineOption(parsed, "state-dir") });
  const fix = error.fix.replace(/`assembly-line runs (list|show)([^`]*)`/g, (_whole, sub: string, rest: string) => {
    const shown = sub === "show" ? ` ${rest.trim() === "" || rest.trim() === "<id>" ? runId : rest.trim()}` : "";
    return `\`assembly-line runs ${sub}${shown} ${at}\``;
  });
  if (fix === error.fix) return error;
  return new AssemblyLineError(error.code, errorSummary(error), { fix, cause: error, ...(error.details ? { details: error.details } : {}) });
}

/**
 * approve, deny or answer refused for a run that waits on nothing because it is queued or running,
 * which a process that stopped mid-run leaves: the runtime's fix ("approvals are single-use") does
 * not say that resume continues it, as `runs show` does.
 */
async function unfinishedPointedToResume(error: unknown, local: LocalRuntime & { agentDir: string }, runId: string, command: string, parsed: ParsedCommand): Promise<unknown> {
  if (command === "resume" || !isAssemblyLineError(error, "AL_ERR_RUN_NOT_RESUMABLE")) return error;
  const status = await local.runtime.getRun(runId).then((run) => run.status, () => undefined);
  if (status !== "running" && status !== "queued") return error;
  const at = runAtFlags({ agentDir: local.agentDir, ...continuedWith(parsed) });
  return new AssemblyLineError(error.code, errorSummary(error), {
    fix: `The run waits on no decision: it is ${status}, left so by a process that stopped before it ended (or one still driving it). Continue it with \`assembly-line resume ${runId} ${at}\`.`,
    cause: error,
    ...(error.details ? { details: error.details } : {}),
  });
}

interface RunLister {
  runs: RunStore;
  currentRevision: string;
  agentId: string;
  close(): Promise<void>;
}

/**
 * The run store alone, for listing: the file state beside the agent when the
 * build composes no gateway, which skips loading the agent and the kernel
 * runtime; the whole local runtime otherwise.
 */
async function openLister(parsed: ParsedCommand, io: CommandIO): Promise<RunLister> {
  const agentDir = resolve(builtAgentFolder(parsed, LIST_USAGE));
  const stateDir = stateDirOption(parsed, { mustExist: true, usage: LIST_USAGE });
  const manifestPath = join(agentDir, ".assembly-line", "manifest.json");
  if (existsSync(manifestPath)) {
    const manifest = JSON.parse(await readFile(manifestPath, "utf8")) as { agentRevision: string; agent: { id: string }; gateway: unknown; sandbox: { adapter?: string } | null };
    if (manifest.gateway === null && (manifest.sandbox === null || manifest.sandbox.adapter === "local")) {
      const { FileStateAdapter } = await import("@assemblyline-agents/local");
      const state = await FileStateAdapter.open(stateDir ? { directory: resolve(stateDir) } : { agentDir });
      return { runs: state, currentRevision: manifest.agentRevision, agentId: manifest.agent.id, close: () => state.close() };
    }
  }
  const local = await open(parsed, io, { usage: LIST_USAGE });
  return { runs: local.runtime.state.runs, currentRevision: local.runtime.manifest.agentRevision, agentId: local.runtime.manifest.agent.id, close: () => local.close() };
}

/** `runs list`: a page of runs; `--cursor` continues where the previous page's nextCursor left off. */
export async function runsList(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const status = stringOption(parsed, "status") as RunStatus | undefined;
  const limitText = stringOption(parsed, "limit") ?? "20";
  // Digits only: Number() would also read "1e1" and "0x10".
  const limit = /^\d+$/.test(limitText) ? Number(limitText) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1) throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--limit ${limitText} is not a positive integer`, { fix: "See assembly-line runs list --help." });
  const cursor = stringOption(parsed, "cursor");
  const json = jsonOption(parsed);
  const lister = await openLister(parsed, io);
  try {
    const page = await lister.runs.listRuns({ ...(status ? { status } : {}), limit, ...(cursor !== undefined ? { cursor } : {}) }).catch((error: unknown) => {
      // The store refuses a cursor it did not print: that is the command line's --cursor.
      if (cursor === undefined || !isAssemblyLineError(error, "AL_ERR_STATE_INPUT_INVALID")) throw error;
      throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--cursor ${cursor} is not a cursor this state store printed`, {
        fix: "Pass the nextCursor the previous page printed, unchanged (its `more:` line, or nextCursor with --json), or leave --cursor out to start from the newest run.",
        cause: error,
      });
    });
    if (json) {
      io.out(envelope({ runs: page.runs, nextCursor: page.nextCursor }));
      return 0;
    }
    for (const run of page.runs) {
      const revision = await revisionOfRun(lister.runs, run);
      // A --state-dir shared with another agent: its runs are not this agent's earlier builds.
      const pinned = !isRunOfAgent(run, lister.agentId) ? `${revision} (agent ${run.agentId})` : revision === lister.currentRevision ? revision : `${revision} (earlier build)`;
      io.out(`${run.id}  ${run.status.padEnd(16)} ${pinned}  ${run.createdAt}  ${JSON.stringify(run.input.message).slice(0, 60)}`);
    }
    if (page.runs.length === 0) io.out("no runs");
    if (page.nextCursor) io.out(`more: assembly-line runs list --cursor ${page.nextCursor}${limit !== 20 ? ` --limit ${limit}` : ""}${sameListing(parsed)}`);
    return 0;
  } finally {
    await lister.close();
  }
}

/**
 * The options of `runs list` besides the page that the command line gave, for its `more:` line:
 * followed as printed, it lists the next page of the same runs, not another filter's or folder's.
 * What the config filled it fills again.
 */
function sameListing(parsed: ParsedCommand): string {
  const status = commandLineOption(parsed, "status");
  const agent = commandLineOption(parsed, "agent");
  const stateDir = commandLineOption(parsed, "state-dir");
  return `${status !== undefined ? ` --status ${status}` : ""}${agent !== undefined ? ` --agent ${JSON.stringify(agent)}` : ""}${stateDir !== undefined ? ` --state-dir ${JSON.stringify(stateDir)}` : ""}`;
}

/** `runs show <runId>`: the timeline, usage and what the run waits for. */
export async function runsShow(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const runId = requirePositional(parsed.positionals, 0, "runId", SHOW_USAGE);
  const local = await open(parsed, io, { usage: SHOW_USAGE });
  try {
    const result = await local.runtime.getRun(runId).catch((error: unknown) => {
      throw runsFixedAt(error, runId, parsed, local.agentDir);
    });
    const events = await local.runtime.listEvents(runId);
    const usage = await local.runtime.state.usage.listUsage({ runId });
    if (local.json) {
      io.out(envelope({ result, events, toolCalls: await local.runtime.state.runs.listToolCalls(runId), usage }));
      return 0;
    }
    const run = (await local.runtime.state.runs.getRun(runId))!;
    const agentId = local.runtime.manifest.agent.id;
    // A migrated run continues on the build it moved to: that one, with the one it started under.
    const continuesOn = await local.runtime.revisionOf(runId);
    const revision = continuesOn === run.agentRevision ? continuesOn : `${continuesOn} (started under ${run.agentRevision})`;
    io.out(`run ${run.id}  ${run.status}  revision ${revision}  model ${run.modelSpec}${isRunOfAgent(run, agentId) ? "" : `  agent ${run.agentId} (not ${agentId})`}`);
    for (const event of events) io.out(formatEvent(event));
    if (usage.length > 0) {
      const total = usage.reduce((sum, record) => ({ input: sum.input + record.inputTokens, output: sum.output + record.outputTokens, cost: sum.cost + record.costUsd }), { input: 0, output: 0, cost: 0 });
      for (const record of usage) io.out(`usage ${record.provider}/${record.model}: ${record.inputTokens} in, ${record.outputTokens} out, ${record.cacheReadTokens} cache read, $${record.costUsd.toFixed(6)}`);
      io.out(`usage total: ${total.input} in, ${total.output} out, $${total.cost.toFixed(6)}`);
    }
    reportResult(result, io, { json: false, agentDir: local.agentDir, ...continuedWith(parsed) });
    // Showing a run succeeds whatever state the run is in.
    return 0;
  } finally {
    await local.close();
  }
}

/** `runs migrate <runId> --to current`. */
export async function runsMigrate(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const runId = requirePositional(parsed.positionals, 0, "runId", MIGRATE_USAGE);
  if (stringOption(parsed, "to") !== "current") {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", "runs migrate moves a paused run to the current build only: pass --to current", { fix: "See assembly-line runs migrate --help." });
  }
  const local = await open(parsed, io, { usage: MIGRATE_USAGE });
  try {
    const run = await requireOwnRun(local, parsed, runId);
    const from = await local.runtime.revisionOf(runId).catch((error: unknown) => {
      throw runsFixedAt(error, runId, parsed, local.agentDir);
    });
    const current = local.runtime.manifest.agentRevision;
    if (from === current && (run?.status === "waiting_approval" || run?.status === "waiting_input")) {
      // The runtime's refusal here advises changing a tool back, which is not what is wrong.
      throw new AssemblyLineError("AL_ERR_RUN_MIGRATION", `run ${runId} already runs on the current build ${current}: there is nothing to move`, {
        fix: `Migrate after a rebuild (\`assembly-line build ${JSON.stringify(local.agentDir)}\`) changed the agent; otherwise decide the run as it is (approve, deny or answer).`,
      });
    }
    const result = await local.runtime.migrateRun(runId, { actor: "cli" }).catch((error: unknown) => {
      throw runsFixedAt(error, runId, parsed, local.agentDir);
    });
    if (!local.json) io.out(`run ${runId} moved from ${from} to ${local.runtime.manifest.agentRevision}`);
    reportResult(result, io, { json: local.json, agentDir: local.agentDir, ...continuedWith(parsed) });
    // Moving the run is what was asked; it still waits for the decision it waited for.
    return 0;
  } finally {
    await local.close();
  }
}

type Decision = (local: LocalRuntime, runId: string, parsed: ParsedCommand) => Promise<RunResult>;

function decisionCommand(usage: string, decide: Decision) {
  return async (parsed: ParsedCommand, io: CommandIO): Promise<number> => {
    const runId = requirePositional(parsed.positionals, 0, "runId", usage);
    const command = usage.split(" ")[1]!;
    const events: RunEvent[] = [];
    let local = await open(parsed, io, { events, usage });
    try {
      // The run continues on its own model: the model flags are checked against it, and --base-url serves it.
      const run = await requireOwnRun(local, parsed, runId);
      if (run) {
        const { continuedRunModels } = await import("../model-flags.js");
        const models = await continuedRunModels(parsed, run, local.runtime.manifest.agent.model, command);
        if (models) {
          // The engine takes its catalog when the runtime is made: reopen with the run's model served at --base-url.
          const first = local;
          await first.close();
          local = { ...first, close: async () => undefined };
          local = await open(parsed, io, { events, usage, models });
        }
      }
      const deciding = decide(local, runId, parsed).catch(async (error: unknown) => {
        throw runsFixedAt(await unfinishedPointedToResume(error, local, runId, command, parsed), runId, parsed, local.agentDir);
      });
      const { result } = await driveUntilSignal(deciding, () => runId, local.runtime, io);
      return reportResult(result, io, { json: local.json, agentDir: local.agentDir, ...continuedWith(parsed), events });
    } finally {
      await local.close();
    }
  };
}

/**
 * A callId given for a run that waits on a budget, not on a tool call, is refused: the
 * runtime would extend (or stop at) the budget and never read the callId, so a call id
 * copied from another run would decide this one.
 */
async function refuseCallIdOnBudgetPause(local: LocalRuntime, runId: string, callId: string | undefined, command: string): Promise<void> {
  if (callId === undefined) return;
  const waiting = await local.runtime.getRun(runId);
  if (waiting.status !== "waiting_approval" || !waiting.pendingBudget || (waiting.pendingApprovals ?? []).length > 0) return;
  // A parent paused on its subagent's budget shows that budget with the subagent run it waits on.
  const whose = waiting.waitingOn ? `its subagent ${waiting.waitingOn.subagent}'s (run ${waiting.waitingOn.runId})` : "its";
  throw new AssemblyLineError("AL_ERR_APPROVAL_NOT_FOUND", `run ${runId} has no pending approval ${callId}: it waits for a decision on ${whose} ${waiting.pendingBudget.budget} budget, not on a tool call`, {
    fix: `Leave the callId out: \`assembly-line ${command} ${runId}\` ${command === "approve" ? "extends the budget" : "stops the run at it"}.`,
  });
}

/**
 * The callId given, if any. An empty or blank one (a shell variable that was not set) is refused
 * rather than read as none, which would decide whatever call is pending.
 */
function callIdOf(value: string | undefined, name: string, usage: string): string | undefined {
  return value === undefined ? undefined : requireText(value, name, `Give the call id the run printed, or leave ${name} out.`, usage);
}

const APPROVE_USAGE = "assembly-line approve <runId> [<callId>] [--agent <dir>]";

export const approveCommand = decisionCommand(APPROVE_USAGE, async (local, runId, parsed) => {
  const callId = callIdOf(parsed.positionals[1], "<callId>", APPROVE_USAGE);
  await refuseCallIdOnBudgetPause(local, runId, callId, "approve");
  return local.runtime.approve(runId, { ...(callId !== undefined ? { callId } : {}), actor: "cli" });
});

const DENY_USAGE = "assembly-line deny <runId> [<callId>] [--reason <text>] [--agent <dir>]";

export const denyCommand = decisionCommand(DENY_USAGE, async (local, runId, parsed) => {
  const callId = callIdOf(parsed.positionals[1], "<callId>", DENY_USAGE);
  const reason = stringOption(parsed, "reason");
  await refuseCallIdOnBudgetPause(local, runId, callId, "deny");
  return local.runtime.deny(runId, { ...(callId !== undefined ? { callId } : {}), ...(reason ? { reason } : {}), actor: "cli" });
});

const ANSWER_USAGE = 'assembly-line answer <runId> "text" [--call <callId>] [--agent <dir>]';

export const answerCommand = decisionCommand(ANSWER_USAGE, (local, runId, parsed) => {
  const text = requireText(requirePositional(parsed.positionals, 1, "text", ANSWER_USAGE), "the answer", 'Give the text that answers the question, e.g. "the corner shop".', ANSWER_USAGE);
  const callId = callIdOf(stringOption(parsed, "call"), "--call", ANSWER_USAGE);
  return local.runtime.answer(runId, text, { ...(callId !== undefined ? { callId } : {}), actor: "cli" });
});

export const resumeCommand = decisionCommand("assembly-line resume <runId> [--agent <dir>]", (local, runId) => local.runtime.resume(runId));
