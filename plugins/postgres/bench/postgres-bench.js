// Durable-run throughput of PostgresStateAdapter at 1, 4 and 16 concurrent runs,
// beside the ceiling the same server gives a single-row INSERT commit, measured
// in the same process, on the same pool, a moment earlier.
//
//   node plugins/postgres/bench/postgres-bench.js      (after `npx tsc -b plugins/postgres`)
//
// Reads DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test); works in a
// random schema that it drops afterwards. Bounded: 3 levels x 2 measurements x
// BENCH_SECONDS (default 3 s), about 20 s in all.
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { PostgresStateAdapter } from "@assemblyline-agents/postgres";

const CONCURRENCY = [1, 4, 16];
const DEFAULT_SECONDS = 3;

/** One durable run the way the runtime writes it: createRun, then 8 appends with their state changes. */
async function durableRun(state, id) {
  const at = new Date().toISOString();
  const call = (status, output) => ({
    runId: id, callId: "call-1", toolName: "lookup_notes", input: { query: "milk" }, inputDigest: "9f2c", status,
    output, modelOutput: output, error: null, approvalId: null, question: null, createdAt: at, updatedAt: at,
  });
  await state.createRun({ id, agentId: "bench", agentRevision: "rev-1", modelSpec: "scripted/bench", conversationId: "conv-1", input: { message: "Remember to buy milk", metadata: { channel: "http" } } });
  await state.appendEvents(id, [{ type: "run.started" }], { run: { status: "running" } });
  await state.appendEvents(id, [{ type: "run.capabilities_resolved", data: { tools: ["lookup_notes", "record_note"] } }]);
  await state.appendEvents(id, [{ type: "model.response", data: { toolCalls: 1 } }, { type: "durable_step.completed", data: { key: "model:1" } }], {
    step: { runId: id, key: "model:1", result: { text: "", toolCalls: [{ id: "call-1", name: "lookup_notes" }] }, metadata: { kind: "model" }, createdAt: at },
  });
  await state.appendEvents(id, [{ type: "tool.called", data: { callId: "call-1" } }], { toolCall: call("requested", null) });
  await state.appendEvents(id, [{ type: "tool.completed", data: { callId: "call-1" } }], { toolCall: call("completed", { notes: ["eggs"] }) });
  await state.appendEvents(id, [{ type: "model.response", data: { toolCalls: 0 } }, { type: "durable_step.completed", data: { key: "model:2" } }], {
    step: { runId: id, key: "model:2", result: { text: "Noted: buy milk." }, metadata: { kind: "model" }, createdAt: at },
    checkpoint: { runId: id, continuation: { v: 1, agentRevision: "rev-1", messages: 4 }, createdAt: at },
  });
  await state.appendEvents(id, [{ type: "run.completed" }], {
    run: { status: "completed", output: { text: "Noted: buy milk." } },
    checkpoint: null,
    delivery: { id: `${id}:reply`, channel: "http", conversationId: "conv-1", payload: { text: "Noted: buy milk." } },
  });
  await state.appendEvents(id, [{ type: "notes.recorded", data: { count: 1 } }]);
}
/** Transactions (commits) and events one durableRun writes. */
const COMMITS_PER_RUN = 9;
const EVENTS_PER_RUN = 11;

/** Run `task` back to back on `concurrency` workers for `ms`; the number completed per second. */
async function measure(concurrency, ms, task) {
  const deadline = Date.now() + ms;
  const started = process.hrtime.bigint();
  let done = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline) {
        await task(next++);
        done += 1;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return done / seconds;
}

const fmt = (n, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

export async function runPostgresBench(options = {}) {
  const connectionString = options.connectionString ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const seconds = Number(options.seconds ?? process.env.BENCH_SECONDS ?? DEFAULT_SECONDS);
  const log = options.log ?? console.log;
  const schema = `al_bench_${randomBytes(5).toString("hex")}`;
  const state = new PostgresStateAdapter({ connectionString, schema, maxConnections: Math.max(...CONCURRENCY) + 2 });
  const pool = state.pool;
  try {
    await state.migrate();
  } catch (error) {
    await state.close();
    const reason = `PostgreSQL at ${connectionString.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@")} is unavailable: ${error.message.split("\n")[0]}`;
    log(`postgres bench skipped: ${reason}`);
    return { skipped: reason };
  }
  try {
    const ceilingTable = `"${schema}".commit_ceiling`;
    await pool.query(`CREATE TABLE ${ceilingTable} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text NOT NULL)`);
    const [{ server, fsync, synchronous_commit }] = (
      await pool.query("SELECT current_setting('server_version') AS server, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS synchronous_commit")
    ).rows;
    log(`PostgreSQL ${server} (fsync=${fsync}, synchronous_commit=${synchronous_commit}); ${seconds}s per measurement`);
    log(`a run = createRun + 8 appendEvents with state changes: ${COMMITS_PER_RUN} commits, ${EVENTS_PER_RUN} events`);

    // Warm the pool and the plan caches so the first level is not charged for connecting.
    await Promise.all(Array.from({ length: Math.max(...CONCURRENCY) }, (_, i) => durableRun(state, `warm-${i}`)));

    const results = [];
    let prefix = 0;
    for (const concurrency of CONCURRENCY) {
      const ceiling = await measure(concurrency, seconds * 1000, () => pool.query(`INSERT INTO ${ceilingTable} (payload) VALUES ($1)`, ["x"]));
      const level = prefix++;
      const runsPerSecond = await measure(concurrency, seconds * 1000, (n) => durableRun(state, `run-${level}-${n}`));
      const commitsPerSecond = runsPerSecond * COMMITS_PER_RUN;
      results.push({
        concurrency,
        runsPerSecond,
        eventsPerSecond: runsPerSecond * EVENTS_PER_RUN,
        commitsPerSecond,
        ceilingCommitsPerSecond: ceiling,
        ratioToCeiling: commitsPerSecond / ceiling,
      });
    }

    log("");
    log("concurrency  runs/s  events/s  commits/s  INSERT ceiling/s  commits vs ceiling  runs/s at ceiling");
    for (const r of results) {
      log(
        `${String(r.concurrency).padStart(11)}  ${fmt(r.runsPerSecond).padStart(6)}  ${fmt(r.eventsPerSecond).padStart(8)}  ${fmt(r.commitsPerSecond).padStart(9)}  ${fmt(r.ceilingCommitsPerSecond).padStart(16)}  ${`${fmt(r.ratioToCeiling * 100, 1)}%`.padStart(18)}  ${fmt(r.ceilingCommitsPerSecond / COMMITS_PER_RUN).padStart(17)}`,
      );
    }
    return { schema, seconds, results };
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await state.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runPostgresBench().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
