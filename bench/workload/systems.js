// One driver per system on the workload of agent.js. Each `open()` returns
// { runOnce(), close(), maxConcurrency }; runOnce() runs the whole workload once.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TURNS, toolFunctions } from "./script.js";

// Assembly Line's modules load only in the processes that run it, so the other
// systems' peak RSS does not include them.
const runtimeModules = () => Promise.all([import("@assemblyline-agents/runtime"), import("./agent.js")]);

const MAX_CONCURRENCY = 50;

/** The floor: the same 3 scripted responses and 2 tool calls, results JSON-encoded, nothing else. */
async function bare() {
  const runOnce = async () => {
    const transcript = [{ role: "user", content: "go" }];
    for (const turn of TURNS) {
      transcript.push({ role: "assistant", turn });
      for (const call of turn.toolCalls ?? []) {
        transcript.push({ role: "tool", content: JSON.stringify(await toolFunctions[call.name](call.input)) });
      }
    }
    return transcript;
  };
  return { runOnce, close: async () => undefined };
}

/**
 * pi-agent-core with a stream function that answers from the script: its minimal
 * model. `api: "loop"` drives runAgentLoop directly; `api: "agent"` uses the Agent
 * class (a fresh Agent per run, as an application holds one per conversation).
 */
async function piAgentCore({ api }) {
  const { Agent, runAgentLoop } = await import("@mariozechner/pi-agent-core");
  const { createAssistantMessageEventStream } = await import("@mariozechner/pi-ai");
  const model = {
    id: "bench", name: "bench", api: "bench", provider: "bench", baseUrl: "http://127.0.0.1", reasoning: false,
    input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 100_000, maxTokens: 1_000,
  };
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  let callIds = 0;
  const streamFn = (_model, context) => {
    const turn = TURNS[context.messages.filter((m) => m.role === "assistant").length];
    const content = turn.toolCalls
      ? turn.toolCalls.map((call) => ({ type: "toolCall", id: `call-${(callIds += 1)}`, name: call.name, arguments: call.input }))
      : [{ type: "text", text: turn.text }];
    const message = { role: "assistant", content, api: "bench", provider: "bench", model: "bench", usage, stopReason: turn.toolCalls ? "toolUse" : "stop", timestamp: Date.now() };
    const stream = createAssistantMessageEventStream();
    stream.push({ type: "start", partial: message });
    stream.push({ type: "done", reason: message.stopReason, message });
    return stream;
  };
  const parameters = { type: "object", properties: { value: { type: "string" } }, required: ["value"] };
  const tools = Object.entries(toolFunctions).map(([name, fn]) => ({
    name, label: name, description: name, parameters,
    execute: async (_id, params) => {
      const result = await fn(params);
      return { content: [{ type: "text", text: JSON.stringify(result) }], details: result };
    },
  }));
  const config = { model, convertToLlm: (messages) => messages };
  const check = (messages) => {
    if (messages.at(-1)?.content?.[0]?.text !== "done") throw new Error("pi-agent-core did not finish the script");
  };
  const runOnce =
    api === "agent"
      ? async () => {
          const agent = new Agent({ initialState: { systemPrompt: "bench", model, tools }, streamFn, convertToLlm: config.convertToLlm });
          await agent.prompt("go");
          check(agent.state.messages);
        }
      : async () => {
          const context = { systemPrompt: "bench", messages: [], tools };
          check(await runAgentLoop([{ role: "user", content: "go", timestamp: Date.now() }], context, config, () => undefined, undefined, streamFn));
        };
  return { runOnce, close: async () => undefined };
}

/** Assembly Line's runtime over `state`; each run is runtime.run(), as a host calls it. */
async function assemblyLine(openState) {
  const [{ OpenEveRuntime, noopLogger }, { benchAgent }] = await runtimeModules();
  const agent = await benchAgent();
  const state = await openState();
  const runtime = new OpenEveRuntime({
    ...agent.bundle, state: state.adapter, agentHarness: agent.harness, logger: noopLogger(),
    maxConcurrentRuns: MAX_CONCURRENCY, maxQueuedRuns: MAX_CONCURRENCY,
  });
  let n = 0;
  const runOnce = async () => {
    const result = await runtime.run({ message: `go ${(n += 1)}` });
    if (result.status !== "completed") throw new Error(`run ended ${result.status}: ${JSON.stringify(result.error ?? null)}`);
  };
  const close = async () => {
    await runtime.close?.();
    await state.close();
    agent.remove();
  };
  return { runOnce, close, state: state.adapter };
}

async function memoryState() {
  const { InMemoryStateAdapter } = await import("@assemblyline-agents/runtime");
  return { adapter: new InMemoryStateAdapter(), close: async () => undefined };
}

/** A memory-backed folder (tmpfs), where a sync costs next to nothing; undefined where there is none. */
const MEMORY_FOLDER = process.platform === "linux" && existsSync("/dev/shm") ? "/dev/shm" : undefined;

async function fileState(parent = process.env.BENCH_TMPDIR ?? tmpdir()) {
  const { FileStateAdapter } = await import("@assemblyline-agents/local");
  const directory = mkdtempSync(join(parent, "al-bench-state-"));
  const adapter = await FileStateAdapter.open({ directory });
  return { adapter, close: async () => { await adapter.close(); rmSync(directory, { recursive: true, force: true }); } };
}

/** PostgreSQL state in a private schema of `connectionString`'s database, dropped on close. */
export async function postgresState(connectionString, schema) {
  const { PostgresStateAdapter } = await import("@assemblyline-agents/postgres");
  const adapter = new PostgresStateAdapter({ connectionString, schema, maxConnections: MAX_CONCURRENCY + 2 });
  await adapter.migrate();
  return {
    adapter,
    close: async () => {
      await adapter.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
      await adapter.close();
    },
  };
}

/**
 * The state writes one run of the workload makes, as the runtime made them: every outermost call on
 * the state (a call the adapter makes on itself inside another is part of that one), reads left out
 * (they build the model's context; no durability rule asks for them).
 */
async function recordedWrites() {
  const opened = await assemblyLine(memoryState);
  try {
    for (let i = 0; i < 50; i++) await opened.runOnce();
    const calls = [];
    let depth = 0;
    const state = opened.state;
    for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(state))) {
      const method = state[name];
      if (name === "constructor" || typeof method !== "function") continue;
      state[name] = function (...args) {
        if (depth === 0 && !/^(get|list|read|require)/.test(name)) calls.push([name, structuredClone(args)]);
        // The in-memory state does a call's work before returning its promise: calls made meanwhile are nested.
        depth += 1;
        try {
          return method.apply(this, args);
        } finally {
          depth -= 1;
        }
      };
    }
    await opened.runOnce();
    return calls;
  } finally {
    await opened.close();
  }
}

/**
 * The in-memory state's own ceiling: the writes one run makes (its run, 14 events, tool calls, steps
 * and their state changes, the lease's release), each awaited before the next as the durability rules
 * ask, replayed on InMemoryStateAdapter with nothing else. A ring of distinct runs on a store made
 * afresh each time it wraps, so the store stays small: faster than any runtime's writes can be.
 */
async function writesAlone() {
  const { InMemoryStateAdapter } = await import("@assemblyline-agents/runtime");
  const calls = await recordedWrites();
  const runId = calls.find(([name]) => name === "createRun")?.[1][0].id;
  if (!runId) throw new Error(`the recorded run made no createRun: ${calls.map(([name]) => name).join(", ")}`);
  const text = JSON.stringify(calls);
  const RING = 200;
  const ring = Array.from({ length: RING }, (_, i) => JSON.parse(text.split(runId).join(`run_ceiling_${i}`)));
  let store;
  let next = 0;
  const runOnce = async () => {
    const i = next++;
    if (i % RING === 0) store = new InMemoryStateAdapter();
    const into = store;
    for (const [name, args] of ring[i % RING]) {
      const result = await into[name](...args);
      if (name === "createRun" && !result.created) throw new Error("a replayed run was not created");
    }
  };
  const callsPerRun = {};
  for (const [name] of calls) callsPerRun[name] = (callsPerRun[name] ?? 0) + 1;
  const eventsPerRun = calls.reduce((sum, [name, args]) => sum + (name === "createRun" ? 1 : name === "appendEvents" ? args[1].length : 0), 0);
  return { runOnce, close: async () => undefined, describe: { callsPerRun, eventsPerRun } };
}

/**
 * The rows the in-memory state keeps for one run of the workload, as the values it stores them from: the
 * run's record, each event's type and data, each tool call and step without its run id (runRows job).
 */
export async function rowsOfOneRun() {
  const opened = await assemblyLine(memoryState);
  try {
    for (let i = 0; i < 5; i++) await opened.runOnce();
    const [record] = (await opened.state.listRuns({ limit: 1 })).runs;
    const events = await opened.state.listEvents(record.id);
    const stepKeys = events.filter((event) => event.type === "durable_step.completed").map((event) => event.data.key);
    const steps = await Promise.all(stepKeys.map((key) => opened.state.getStep(record.id, key)));
    const withoutRunId = ({ runId: _runId, ...row }) => row;
    return {
      record,
      events: events.map(({ type, data }) => ({ type, data })),
      toolCalls: (await opened.state.listToolCalls(record.id)).map(withoutRunId),
      steps: steps.map(withoutRunId),
    };
  } finally {
    await opened.close();
  }
}

/**
 * The least memory a runtime on pi-agent-core's loop that keeps the in-memory state's rows could need:
 * pi-agent-core's Agent runs the workload, and each run then leaves the rows the in-memory state keeps
 * for one (`rows`, from rowsOfOneRun), held as that state holds them (flat JSON text, the record as an
 * object, maps by run, call and step). Nothing of Assembly Line is loaded. It keeps less than the state
 * does (one time for all of a run's events, no idempotency or ordinal index), so its peak is a floor.
 */
async function piAgentCoreWithRows({ rows }) {
  if (!rows) throw new Error("pi-agent-core-rows needs the rows of one run (the runRows job)");
  const pi = await piAgentCore({ api: "agent" });
  const { randomUUID } = await import("node:crypto");
  // As the in-memory state keeps a text: flattened from the tree of pieces JSON.stringify builds.
  const text = (value) => {
    const json = JSON.stringify(value);
    Number(json);
    return json;
  };
  const runs = new Map();
  const runOnce = async () => {
    await pi.runOnce();
    const id = `run_${randomUUID()}`;
    const time = new Date().toISOString();
    runs.set(id, {
      record: { ...rows.record, id, createdAt: time, updatedAt: time },
      events: rows.events.map(text),
      eventTimes: rows.events.map(() => time),
      toolCalls: new Map(rows.toolCalls.map((call) => [call.callId, text(call)])),
      steps: new Map(rows.steps.map((step) => [step.key, text(step)])),
    });
  };
  return { runOnce, close: async () => undefined };
}

export const SYSTEMS = {
  bare: { label: "bare loop (floor)", open: bare },
  "pi-agent-core": { label: "pi-agent-core Agent (not durable)", open: () => piAgentCore({ api: "agent" }) },
  "pi-agent-loop": { label: "pi-agent-core runAgentLoop", open: () => piAgentCore({ api: "loop" }) },
  // A floor for peak RSS only (the peak job's): its runs/s are pi-agent-core's and a few copies.
  "pi-agent-core-rows": { label: "pi-agent-core + the state's rows", open: piAgentCoreWithRows, peakOnly: true },
  memory: { label: "Assembly Line, in-memory state", open: () => assemblyLine(memoryState) },
  file: { label: "Assembly Line, file state", open: () => assemblyLine(fileState) },
  postgres: {
    label: "Assembly Line, PostgreSQL state",
    open: () => assemblyLine(() => postgresState(process.env.BENCH_DATABASE_URL, `al_bench_${process.pid}`)),
  },
  // A ceiling, not a runtime: measured in turn with the others, so the bound it gives holds for the same stretch of time.
  "memory-writes": { label: "one run's writes alone, in-memory", open: writesAlone, ceiling: true },
  // The file state with syncs that cost next to nothing: what its own work allows, whatever the disk.
  "file-memory-folder": {
    label: "file state, folder in memory",
    open: () => assemblyLine(() => fileState(MEMORY_FOLDER)),
    ceiling: true,
    unavailable: MEMORY_FOLDER ? undefined : "no memory-backed folder (/dev/shm) on this platform",
  },
};
