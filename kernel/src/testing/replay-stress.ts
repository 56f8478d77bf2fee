import {
  AssemblyLineError,
  noopLogger,
  type JsonValue,
  type ReplayProblem,
  type ReplayStressReport,
  type RunEvent,
  type StateAdapter,
} from "@assemblyline-agents/core";
import type { AgentManifest } from "../compiler/manifest.js";
import type { SourceBundle } from "../compiler/bundle.js";
import { scriptedHarness, type ModelScript } from "../harness/scripted.js";
import { createKernel } from "../kernel.js";
import { OpenEveRuntime, type RuntimeOptions } from "../runtime.js";
import { InMemoryStateAdapter } from "../state/in-memory-state.js";

export interface ReplayStressOptions {
  bundle: { manifest: AgentManifest; sourceBundle: SourceBundle; artifactRoot?: string };
  /** The scripted conversation: one model response per turn. */
  script: ModelScript;
  message: string;
  conversationId?: string;
  /** Answers for the questions the run asks, in order (default "yes"). */
  answers?: string[];
  /** Anything else the runtime needs (a sandbox, blobs, host policy). State and engine are the stress's own. */
  runtimeOptions?: Omit<Partial<RuntimeOptions>, "state" | "agentHarness" | "kernel">;
  /** Called after each boundary is tried, for progress output. */
  onBoundary?(boundary: number, of: number, problems: ReplayProblem[]): void;
}

/** Durable writes of the state facets: each is a point where a process may die. */
const BOUNDARY_METHODS = new Set([
  "createRun",
  "appendEvents",
  "appendConversationMessages",
  "putFileRecord",
  "deleteFileRecord",
  "recordUsage",
  "writeMemory",
  "deleteMemory",
]);

/** Long enough that a live drive never loses its lease; short enough to wait out after a stop. */
const LEASE_TTL_MS = 200;

/**
 * Run a scripted conversation once to record it, then once per durable write
 * of that recording: stop the process right after that write (every later
 * state call fails, as in a crash), continue the run in a fresh runtime on the
 * same state, and compare with the recording.
 */
export async function replayStress(options: ReplayStressOptions): Promise<ReplayStressReport> {
  const recorded = await attempt(options, Number.POSITIVE_INFINITY);
  const problems: ReplayProblem[] = [];
  for (let boundary = 1; boundary < recorded.writes.length; boundary += 1) {
    const stressed = await attempt(options, boundary);
    const found = compare(recorded, stressed).map((problem) => ({ boundary, after: recorded.writes[boundary - 1]!, ...problem }));
    problems.push(...found);
    options.onBoundary?.(boundary, recorded.writes.length - 1, found);
  }
  return { boundaries: recorded.writes.length, recorded: { status: recorded.status, text: recorded.text }, problems };
}

interface Attempt {
  status: string;
  text: string | null;
  /** Each durable write, described, in order. */
  writes: string[];
  events: RunEvent[];
  /** Observable state the run left: memory, files, conversation history. */
  sideEffects: SideEffect[];
  /** Calls recorded completed when the process stopped, and those executed after. */
  completedAtStop: Set<string>;
  executedAfterStop: Map<string, number>;
}

async function attempt(options: ReplayStressOptions, stopAfter: number): Promise<Attempt> {
  const state = new InMemoryStateAdapter();
  const writes: string[] = [];
  const crashing = stopAfterWrites(state, stopAfter, writes);
  const first = await runtimeOn(options, crashing.state, new Map());
  let runId: string | undefined;
  const answers = [...(options.answers ?? [])];
  try {
    const started = await first.runtime.run({ message: options.message, ...(options.conversationId ? { conversationId: options.conversationId } : {}) });
    runId = started.runId;
    await settle(first.runtime, runId, answers);
  } catch (error) {
    if (!crashing.stopped()) throw error;
  }
  await first.runtime.onIdle().catch(() => undefined);
  // The newest run may be a subagent's child run: the one under test is the run no parent started.
  runId ??= (await state.listRuns({ limit: 100 })).runs.find((run) => !run.input.parent)?.id;
  if (!runId) throw new AssemblyLineError("AL_ERR_SCRIPTED_MODEL", "replay stress: the run was never created", { fix: "Check the agent builds and the script starts." });

  const completedAtStop = new Set((await state.listToolCalls(runId)).filter((call) => call.status === "completed").map((call) => call.callId));
  const executedAfterStop = new Map<string, number>();
  if (crashing.stopped()) {
    // The stopped process's leases (the run's, and its subagents' runs') run out before a fresh one can take them.
    for (const { id } of (await state.listRuns({ limit: 100 })).runs) await waitForLeaseExpiry(state, id);
    const second = await runtimeOn(options, state, executedAfterStop);
    // As a host does when it starts: take over what the stopped process held (a subagent's run too).
    await second.runtime.recoverRuns();
    await settle(second.runtime, runId, answers);
    await second.runtime.onIdle();
  }
  const run = (await state.getRun(runId))!;
  return {
    status: run.status,
    text: textOf(run.output),
    writes,
    events: await state.listEvents(runId),
    sideEffects: await sideEffectsOf(state, options.conversationId),
    completedAtStop,
    executedAfterStop,
  };
}

async function runtimeOn(options: ReplayStressOptions, state: StateAdapter, executions: Map<string, number>) {
  // Counts every execution of every tool by call id, to catch a completed call running again.
  const kernel = await createKernel();
  kernel.hooks.tools.tap("replay-stress-counter", (table) => {
    for (const [name, entry] of table) {
      const execute = entry.definition.execute;
      table.set(name, {
        ...entry,
        definition: {
          ...entry.definition,
          execute: (input: unknown, ctx: { toolCallId: string }) => {
            executions.set(ctx.toolCallId, (executions.get(ctx.toolCallId) ?? 0) + 1);
            return execute(input, ctx as never);
          },
        },
      });
    }
    return table;
  });
  const runtime = new OpenEveRuntime({
    ...options.bundle,
    logger: noopLogger(),
    ...options.runtimeOptions,
    state,
    kernel,
    agentHarness: scriptedHarness(options.script),
    leaseTtlMs: LEASE_TTL_MS,
  });
  return { runtime };
}

/** Decide pauses the way the recording did (approve, answer) and resume until the run is final. */
async function settle(runtime: OpenEveRuntime, runId: string, answers: string[]): Promise<void> {
  for (let moves = 0; moves < 100; moves += 1) {
    const { status } = await runtime.getRun(runId);
    if (status === "completed" || status === "failed") return;
    if (status === "waiting_approval") await runtime.approve(runId);
    else if (status === "waiting_input") await runtime.answer(runId, answers.shift() ?? "yes");
    else await runtime.resume(runId);
  }
}

async function waitForLeaseExpiry(state: StateAdapter, runId: string): Promise<void> {
  for (;;) {
    const lease = (await state.getRun(runId))?.lease;
    if (!lease || Date.parse(lease.expiresAt) <= Date.now()) return;
    await new Promise((resolve) => setTimeout(resolve, Math.max(5, Date.parse(lease.expiresAt) - Date.now() + 5)));
  }
}

/**
 * The state as one process sees it: after `stopAfter` durable writes every
 * call fails as an unreachable store would, so nothing more is written or read.
 */
function stopAfterWrites(state: StateAdapter, stopAfter: number, writes: string[]) {
  let stopped = false;
  const unavailable = () =>
    new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", "replay stress: the process stopped here", { fix: "Nothing to fix: a fresh runtime continues the run." });
  const proxy = new Proxy(state, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (stopped) return Promise.reject(unavailable());
        const result = value.apply(target, args);
        if (!BOUNDARY_METHODS.has(String(property))) return result;
        return Promise.resolve(result).then((settled) => {
          writes.push(describeWrite(String(property), args));
          if (writes.length >= stopAfter) stopped = true;
          return settled;
        });
      };
    },
  });
  return { state: proxy, stopped: () => stopped };
}

function describeWrite(method: string, args: unknown[]): string {
  if (method === "appendEvents") return `appendEvents ${(args[1] as Array<{ type: string }>).map((event) => event.type).join(", ")}`;
  if (method === "writeMemory" || method === "deleteMemory") return `${method} ${String((args[0] as { path?: string })?.path ?? args[0])}`;
  return method;
}

/**
 * What the run left behind, by kind, as (name, value) pairs. Names may hold the
 * run id (idempotency keys do), which differs between attempts, so attempts
 * are compared by the values each kind holds, not by name.
 */
async function sideEffectsOf(state: InMemoryStateAdapter, conversationId: string | undefined): Promise<SideEffect[]> {
  const effects: SideEffect[] = [];
  for (const path of await state.listMemory()) {
    effects.push({ kind: "memory", name: path, value: (await state.readMemory(path))?.content ?? "" });
  }
  for (const file of await state.listFileRecords()) effects.push({ kind: "file", name: file.path, value: `${file.sha256} ${file.size} ${file.contentType}` });
  if (conversationId) {
    for (const message of await state.listConversationMessages(conversationId, { limit: 1000 })) {
      effects.push({ kind: "conversation message", name: `${conversationId} ${message.role}`, value: `${message.role}: ${message.content}` });
    }
  }
  return effects;
}

interface SideEffect {
  kind: string;
  name: string;
  value: string;
}

function compareSideEffects(recorded: SideEffect[], stressed: SideEffect[]): string[] {
  const tally = (effects: SideEffect[]) => {
    const counts = new Map<string, SideEffect[]>();
    for (const effect of effects) {
      const key = `${effect.kind}\u0000${effect.value}`;
      counts.set(key, [...(counts.get(key) ?? []), effect]);
    }
    return counts;
  };
  const before = tally(recorded);
  const after = tally(stressed);
  const differences: string[] = [];
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const was = before.get(key) ?? [];
    const now = after.get(key) ?? [];
    if (was.length === now.length) continue;
    const { kind, value } = (now[0] ?? was[0])!;
    const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
    differences.push(
      now.length > was.length
        ? `${kind} ${shown} was written ${now.length} times (${now.map((effect) => effect.name).join(", ")}), ${was.length} in the recording: a write without ctx.idempotencyKey(...) was applied again`
        : `${kind} ${shown} was written ${now.length} times, ${was.length} in the recording (${was.map((effect) => effect.name).join(", ")}): a write was lost`,
    );
  }
  return differences;
}

function compare(recorded: Attempt, stressed: Attempt): Array<Omit<ReplayProblem, "boundary" | "after">> {
  const problems: Array<Omit<ReplayProblem, "boundary" | "after">> = [];
  if (stressed.status !== "completed" && stressed.status !== "failed") {
    problems.push({ kind: "did_not_finish", detail: `the run stayed ${stressed.status}` });
  } else if (stressed.status !== recorded.status || stressed.text !== recorded.text) {
    problems.push({ kind: "output_differs", detail: `recorded ${recorded.status} ${JSON.stringify(recorded.text)}, got ${stressed.status} ${JSON.stringify(stressed.text)}` });
  }
  for (const callId of stressed.completedAtStop) {
    const runs = stressed.executedAfterStop.get(callId) ?? 0;
    if (runs > 0) problems.push({ kind: "completed_call_reran", detail: `tool call ${callId} was recorded completed, then executed ${runs} more time(s)` });
  }
  for (const [key, count] of countBy(stressed.events, "durable_step.completed", "key")) {
    if (count > 1) problems.push({ kind: "step_reran", detail: `step ${key} completed ${count} times` });
  }
  const seqs = stressed.events.map((event) => event.seq);
  if (seqs.some((seq, index) => seq !== index + 1)) problems.push({ kind: "events_out_of_order", detail: `seq ${seqs.join(",")} is not 1..${seqs.length}` });
  for (const [callId, count] of countBy(stressed.events, "tool.completed", "callId")) {
    if (count > 1) problems.push({ kind: "events_out_of_order", detail: `tool call ${callId} has ${count} tool.completed events` });
  }
  const finals = stressed.events.filter((event) => event.type === "run.completed" || event.type === "run.failed").length;
  if (finals > 1) problems.push({ kind: "events_out_of_order", detail: `${finals} run.completed/run.failed events` });
  for (const detail of compareSideEffects(recorded.sideEffects, stressed.sideEffects)) problems.push({ kind: "side_effect_repeated", detail });
  const outcomes = callOutcomes(stressed.events);
  for (const [callId, { tool, outcome }] of callOutcomes(recorded.events)) {
    const now = outcomes.get(callId)?.outcome;
    if (now !== undefined && now !== outcome) {
      problems.push({ kind: "call_outcome_differs", detail: `tool call ${callId} (${tool}) ended with ${now} where the recording has ${outcome}: a call run again after the stop must take its own earlier effect as done` });
    }
  }
  return problems;
}

/** How each tool call ended: a result, an error-shaped result the model sees, or a failure. */
function callOutcomes(events: RunEvent[]): Map<string, { tool: string; outcome: "a result" | "an error result" | "a failure" }> {
  const outcomes = new Map<string, { tool: string; outcome: "a result" | "an error result" | "a failure" }>();
  for (const event of events) {
    const data = event.data as { callId?: unknown; toolName?: unknown; modelOutput?: unknown };
    if (typeof data.callId !== "string") continue;
    const tool = typeof data.toolName === "string" ? data.toolName : "?";
    if (event.type === "tool.execution_failed") outcomes.set(data.callId, { tool, outcome: "a failure" });
    else if (event.type === "tool.completed") {
      const errorShaped = typeof data.modelOutput === "object" && data.modelOutput !== null && !Array.isArray(data.modelOutput) && "error" in data.modelOutput;
      outcomes.set(data.callId, { tool, outcome: errorShaped ? "an error result" : "a result" });
    }
  }
  return outcomes;
}

function countBy(events: RunEvent[], type: string, field: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const event of events) {
    if (event.type !== type) continue;
    const key = String(event.data[field] as JsonValue);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

function textOf(output: JsonValue | null | undefined): string | null {
  const text = output && typeof output === "object" && !Array.isArray(output) ? output.text : undefined;
  return typeof text === "string" ? text : null;
}
