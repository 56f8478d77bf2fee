// One system of the workload bench in a process of its own, so its peak RSS is its
// own. The parent forks this file with a job and gets one message back (the serve job: one per request).
//
//   job "serve":      open the system, warm it up, then measure a level each time the parent asks
//                     ({ concurrency, ms }: runs/s, syncs (file state) and SQL statements per run),
//                     until it says { close: true }: the parent takes turns between systems, so
//                     every system is measured across the same stretch of time.
//   job "rss":        a fixed number of runs at 50 concurrent, then the peak RSS, with how much the old
//                     generation grew meanwhile and the collections that ran (what the peak follows).
//   job "stateRows":  the heap the in-memory state's rows take after the rss job's runs.
//   job "runRows":    the values the in-memory state keeps as one run's rows (for the pi-agent-core-rows floor).
//   job "commits":    PostgreSQL statements, transactions, writing transactions and WAL fdatasyncs
//                     per run, counted by the server for a private database.
//   job "paused":     heap the runtime holds for 10,000 paused runs.
//   job "disk":       the disk's own ceiling: 200-byte synced writes, each durable before the next, as the log
//                     writes them (into space filled ahead where the platform has O_DSYNC, else appended).
//   job "postgresCeiling": the server's own ceiling: one-row INSERTs, each its own transaction, on 1, 16
//                     and 50 connections.
import { on } from "node:events";
import fs, { constants, readFileSync } from "node:fs";
import { open, rm } from "node:fs/promises";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PerformanceObserver, constants as perfConstants, performance } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";
import { SYSTEMS, rowsOfOneRun } from "./systems.js";

const job = JSON.parse(process.argv[2]);
const counters = { syncs: 0, statements: 0, clientCommits: 0 };
/** Statements by what they do (their SQL up to the first parenthesis or WHERE), for the breakdown per run. */
const statementKinds = new Map();
const kindOf = (text) => text.replace(/\s+/g, " ").replace(/"[^"]*"\./g, "").split(/\(| WHERE /)[0].slice(0, 60);

/**
 * Count every sync the file state can make: each fsync/fdatasync, through a FileHandle or
 * fs's synchronous calls, and each write to a file opened with O_DSYNC (a write that returns
 * once durable, which is how the file state's log syncs where the platform has it), through a
 * FileHandle (its writes through the thread pool) or fs.writeSync (its writes on the event loop).
 */
async function countSyncs() {
  const path = join(tmpdir(), `al-bench-probe-${process.pid}`);
  const handle = await open(path, "w");
  const proto = Object.getPrototypeOf(handle);
  await handle.close();
  await rm(path, { force: true });
  for (const name of ["datasync", "sync"]) {
    const original = proto[name];
    proto[name] = function (...args) {
      counters.syncs += 1;
      return original.apply(this, args);
    };
  }
  // Whether an fd was opened with O_DSYNC, from its flags in /proc (absent elsewhere: none counted).
  const syncedFds = new Map();
  const isSynced = (fd) => {
    if (!syncedFds.has(fd)) {
      let flags = 0;
      try {
        flags = Number.parseInt(/^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))?.[1] ?? "0", 8);
      } catch {
        // not Linux: the log syncs with fdatasync there, counted above
      }
      syncedFds.set(fd, constants.O_DSYNC !== undefined && (flags & constants.O_DSYNC) === constants.O_DSYNC);
    }
    return syncedFds.get(fd);
  };
  const { write, writev, close } = proto;
  proto.write = function (...args) {
    if (isSynced(this.fd)) counters.syncs += 1;
    return write.apply(this, args);
  };
  // The log's fills of zeros ahead of its end (one synced write each).
  proto.writev = function (...args) {
    if (isSynced(this.fd)) counters.syncs += 1;
    return writev.apply(this, args);
  };
  proto.close = function (...args) {
    syncedFds.delete(this.fd);
    return close.apply(this, args);
  };
  const { writeSync } = fs;
  fs.writeSync = function (fd, ...args) {
    if (isSynced(fd)) counters.syncs += 1;
    return writeSync.call(this, fd, ...args);
  };
  for (const name of ["fdatasyncSync", "fsyncSync"]) {
    const original = fs[name];
    fs[name] = function (...args) {
      counters.syncs += 1;
      return original.apply(this, args);
    };
  }
  // Modules that imported these names by name see the counted ones.
  syncBuiltinESMExports();
}

/** Count every statement a pg client sends, and the commits they imply (autocommit statements + COMMIT). */
function countStatements() {
  const pg = createRequire(import.meta.url)("pg");
  const original = pg.Client.prototype.query;
  const inTransaction = new WeakSet();
  pg.Client.prototype.query = function (config, ...rest) {
    const text = (typeof config === "string" ? config : config?.text ?? "").trimStart().toUpperCase();
    counters.statements += 1;
    const kind = kindOf(typeof config === "string" ? config : config?.text ?? "");
    statementKinds.set(kind, (statementKinds.get(kind) ?? 0) + 1);
    if (text.startsWith("BEGIN") || text.startsWith("START TRANSACTION")) inTransaction.add(this);
    else if (text.startsWith("COMMIT") || text.startsWith("ROLLBACK")) {
      if (text.startsWith("COMMIT")) counters.clientCommits += 1;
      inTransaction.delete(this);
    } else if (!inTransaction.has(this)) counters.clientCommits += 1;
    return original.call(this, config, ...rest);
  };
}

/** Run `runOnce` on `concurrency` workers for `ms`, or for `count` runs; runs/s and counters per run. */
async function measure(runOnce, { concurrency, ms, count }) {
  const before = { ...counters };
  const deadline = performance.now() + (ms ?? Infinity);
  let started = 0;
  let done = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline && (count === undefined || started < count)) {
        started += 1;
        await runOnce();
        done += 1;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const per = (key) => (counters[key] - before[key]) / done;
  return { concurrency, runs: done, runsPerSecond: done / seconds, syncsPerRun: per("syncs"), statementsPerRun: per("statements"), clientCommitsPerRun: per("clientCommits") };
}

const oldSpaceBytes = () => getHeapSpaceStatistics().find((space) => space.space_name === "old_space")?.space_size ?? 0;

async function rss({ system, runs, concurrency, rows }) {
  const opened = await SYSTEMS[system].open({ rows });
  const collections = { minor: 0, major: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const { detail } of list.getEntries()) {
      if (detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) collections.major += 1;
      else if (detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) collections.minor += 1;
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  try {
    const oldSpaceBefore = oldSpaceBytes();
    const result = await measure(opened.runOnce, { concurrency, count: runs });
    const oldSpaceGrowthBytes = oldSpaceBytes() - oldSpaceBefore;
    // The observer hears of collections after the runs, once the event loop turns.
    await new Promise((resolve) => setTimeout(resolve, 50));
    return {
      runs, concurrency, runsPerSecond: result.runsPerSecond, peakRssBytes: process.resourceUsage().maxRSS * 1024,
      oldSpaceGrowthBytes, minorCollections: collections.minor, majorCollections: collections.major,
    };
  } finally {
    observer.disconnect();
    await opened.close();
  }
}

async function serve({ system, warmup }) {
  const opened = await SYSTEMS[system].open();
  try {
    await measure(opened.runOnce, { concurrency: 1, count: warmup });
    process.send({ ready: true, describe: opened.describe });
    for await (const [request] of on(process, "message")) {
      if (request.close) break;
      const { concurrency, ms } = request;
      // Fill the level's pipeline first: the measured slice starts with every worker busy.
      await measure(opened.runOnce, { concurrency, count: concurrency * 2 });
      process.send({ measured: await measure(opened.runOnce, { concurrency, ms }) });
    }
    return {};
  } finally {
    await opened.close();
  }
}

/**
 * The server's counters, read on a connection of its own: transactions committed in this database (read-only ones
 * included: each statement outside a transaction is one), transaction ids handed
 * out (only a transaction that writes gets one; server-wide, so the bench wants
 * a quiet server), and WAL fdatasyncs (server-wide; a commit that waits for its
 * WAL flush causes one unless it shares another's).
 */
async function serverCounters(connectionString) {
  const pg = createRequire(import.meta.url)("pg");
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT (SELECT xact_commit::bigint FROM pg_stat_database WHERE datname = current_database()) AS commits,
        txid_snapshot_xmax(txid_current_snapshot())::bigint AS next_xid,
        (SELECT wal_sync::bigint FROM pg_stat_wal) AS wal_syncs`,
    );
    return { commits: Number(rows[0].commits), writes: Number(rows[0].next_xid), walSyncs: Number(rows[0].wal_syncs) };
  } finally {
    await client.end();
  }
}

/**
 * Heap the in-memory state's rows take after the rss job's workload: the same runs, then,
 * with the runtime closed, the heap with the state kept minus the heap once it is dropped.
 */
async function stateRows({ runs, concurrency }) {
  const gcNow = async () => {
    for (let i = 0; i < 3; i++) {
      globalThis.gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    return process.memoryUsage().heapUsed;
  };
  let opened = await SYSTEMS.memory.open();
  await measure(opened.runOnce, { concurrency, count: runs });
  await opened.close();
  const withState = await gcNow();
  opened = undefined;
  const withoutState = await gcNow();
  return { runs, stateRowsBytes: withState - withoutState };
}

/**
 * Transactions, writing transactions and WAL fdatasyncs per run, counted by the server
 * (serverCounters), and statements by kind, counted at the client: open a system, do
 * `runs` sequential runs, close it; once with 0 runs and once with `runs`, so opening,
 * migrating and closing cancel out.
 */
async function commits({ runs, connectionString }) {
  const phase = async (count) => {
    // Closing the pool ends its backends, which report their WAL counters as they exit; the
    // WAL writer reports its own (the flushes of commits that did not wait) within about a second.
    const settle = () => new Promise((resolve) => setTimeout(resolve, 1_500));
    await settle();
    const before = await serverCounters(connectionString);
    const statementsBefore = counters.statements;
    const opened = await SYSTEMS.postgres.open();
    await measure(opened.runOnce, { concurrency: 1, count });
    await opened.close();
    await settle();
    const after = await serverCounters(connectionString);
    return {
      commits: after.commits - before.commits,
      writes: after.writes - before.writes,
      walSyncs: after.walSyncs - before.walSyncs,
      statements: counters.statements - statementsBefore,
    };
  };
  const empty = await phase(0);
  const kindsBefore = new Map(statementKinds);
  const full = await phase(runs);
  const perRun = [...statementKinds]
    .map(([kind, n]) => [kind, (n - 2 * (kindsBefore.get(kind) ?? 0)) / runs])
    .filter(([, n]) => n >= 0.5)
    .sort((a, b) => b[1] - a[1]);
  return {
    runs,
    commitsPerRun: (full.commits - empty.commits) / runs,
    writeTransactionsPerRun: (full.writes - empty.writes) / runs,
    walSyncsPerRun: (full.walSyncs - empty.walSyncs) / runs,
    statementsPerRun: (full.statements - empty.statements) / runs, statementsByKind: Object.fromEntries(perRun) };
}

/**
 * Heap the host holds for paused runs: pause `runs` runs (the first tool asks for
 * approval), then compare the heap with the runtime alive and after dropping it
 * while keeping the state. In-memory state keeps its rows in this heap; that part
 * is reported on its own as the state's.
 */
async function paused({ runs }) {
  const gcNow = async () => {
    for (let i = 0; i < 3; i++) {
      globalThis.gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    return process.memoryUsage().heapUsed;
  };
  const { InMemoryStateAdapter, OpenEveRuntime, noopLogger } = await import("@assemblyline-agents/runtime");
  const { benchAgent } = await import("./agent.js");
  const agent = await benchAgent({ approval: true });
  const state = new InMemoryStateAdapter();
  let runtime = new OpenEveRuntime({ ...agent.bundle, state, agentHarness: agent.harness, logger: noopLogger(), maxConcurrentRuns: 50, maxQueuedRuns: 50 });
  await runtime.run({ message: "warm" });
  const start = await gcNow();
  let n = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (n < runs) {
        n += 1;
        const result = await runtime.run({ message: `pause ${n}` });
        if (result.status !== "waiting_approval") throw new Error(`expected a run waiting for approval, got ${result.status}`);
      }
    }),
  );
  const withRuntime = await gcNow();
  await runtime.close();
  runtime = undefined;
  const stateOnly = await gcNow();
  agent.remove();
  return { runs, hostHeapBytes: withRuntime - stateOnly, stateHeapBytes: stateOnly - start, hostBytesPerRun: (withRuntime - stateOnly) / runs };
}

/**
 * Syncs per second the disk gives one writer: 200-byte appends, each durable before the next, made
 * as the file state's log makes them (O_DSYNC writes where the platform has them, else write + fdatasync).
 */
async function disk({ ms }) {
  const path = join(process.env.BENCH_TMPDIR ?? tmpdir(), `al-bench-disk-${process.pid}`);
  const synced = constants.O_DSYNC !== undefined;
  const handle = await open(path, synced ? constants.O_RDWR | constants.O_CREAT | constants.O_DSYNC : "a");
  const line = Buffer.alloc(200, 0x61);
  // As the log writes where it has O_DSYNC: into space filled with zeros ahead (synced before the clock starts).
  const ahead = synced ? 64 * 1024 * 1024 : 0;
  if (synced) {
    const zeros = Buffer.alloc(1024 * 1024);
    for (let at = 0; at < ahead; at += zeros.length) await handle.write(zeros, 0, zeros.length, at);
  }
  let syncs = 0;
  const t0 = performance.now();
  try {
    while (performance.now() - t0 < ms) {
      const position = synced ? (syncs * line.length) % ahead : null;
      await handle.write(line, 0, line.length, position);
      if (!synced) await handle.datasync();
      syncs += 1;
    }
  } finally {
    await handle.close();
    await rm(path, { force: true });
  }
  const seconds = (performance.now() - t0) / 1000;
  return { syncsPerSecond: syncs / seconds, msPerSync: (seconds * 1000) / syncs };
}

/**
 * Commits/s the PostgreSQL server gives, at each level, to transactions that each wait for their WAL flush:
 * `concurrency` connections, each inserting one ~300-byte row per transaction (autocommit) in a loop for
 * `ms`. Nothing is cheaper to commit, so a client that makes N such commits per run, one after another,
 * can do at most commits/s / N runs/s at that level.
 */
async function postgresCeiling({ connectionString, levels, ms }) {
  const pg = createRequire(import.meta.url)("pg");
  const schema = `al_bench_ceiling_${process.pid}`;
  const admin = new pg.Client({ connectionString });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(`CREATE TABLE ${schema}.rows (id bigserial PRIMARY KEY, body text NOT NULL)`);
    // A named statement is parsed once per connection, as the adapter's statements are.
    const insert = { name: "ceiling_insert", text: `INSERT INTO ${schema}.rows (body) VALUES ($1)`, values: ["x".repeat(300)] };
    const results = [];
    for (const concurrency of levels) {
      const clients = Array.from({ length: concurrency }, () => new pg.Client({ connectionString }));
      try {
        // Connect and prepare before the clock starts: the ceiling is of commits, not of connecting.
        await Promise.all(clients.map(async (client) => { await client.connect(); await client.query(insert); }));
        let commits = 0;
        const t0 = performance.now();
        await Promise.all(
          clients.map(async (client) => {
            while (performance.now() - t0 < ms) {
              await client.query(insert);
              commits += 1;
            }
          }),
        );
        results.push({ concurrency, commitsPerSecond: commits / ((performance.now() - t0) / 1000) });
      } finally {
        await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
      }
    }
    return { levels: results };
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await admin.end();
  }
}

await countSyncs();
if (job.system === "postgres" || job.kind === "commits") countStatements();
const jobs = { serve, rss, stateRows, runRows: rowsOfOneRun, commits, paused, disk, postgresCeiling };
try {
  process.send({ ok: true, result: await jobs[job.kind](job) });
} catch (error) {
  process.send({ ok: false, error: error instanceof Error ? error.stack : String(error) });
}
process.disconnect();
