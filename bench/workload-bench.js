// The workload of bench/workload/agent.js (3 model turns, 2 tool calls per run) on
// every system, each in a child process of its own (bench/workload/child.js):
// runs/s sequential, 16 and 50 concurrent; fdatasyncs per run (file state);
// statements and commits per run (PostgreSQL, a private database made and dropped
// here); peak RSS at 50 concurrent; heap held for 10,000 paused runs. Ratios are
// the point: every figure is measured in the same run on the same machine.
//
//   node bench/workload-bench.js          (after `npx tsc -b`)
//
// BENCH_SECONDS (default 2) per level; DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test).
import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { SYSTEMS } from "./workload/systems.js";

const CHILD = new URL("./workload/child.js", import.meta.url);
const LEVELS = [1, 16, 50];

/** Fork the child with `job`; resolve with its one result. */
function inChild(job, env = {}, execArgv = []) {
  return new Promise((resolve, reject) => {
    const child = fork(CHILD, [JSON.stringify(job)], { env: { ...process.env, ...env }, execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
    let answer;
    child.once("message", (message) => (answer = message));
    child.once("error", reject);
    child.once("exit", (code) => {
      if (answer?.ok) resolve(answer.result);
      else reject(new Error(answer?.error ?? `child for ${job.kind} ${job.system ?? ""} exited with ${code}`));
    });
  });
}

/** A private database for the PostgreSQL runs, so pg_stat_database counts only ours; null when unavailable. */
async function privateDatabase(connectionString) {
  const pg = createRequire(import.meta.url)("pg");
  const name = `al_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (error) {
    await admin.end().catch(() => undefined);
    return { skipped: error instanceof Error ? error.message.split("\n")[0] : String(error) };
  }
  const url = new URL(connectionString);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}

export async function runWorkloadBench({
  seconds = Number(process.env.BENCH_SECONDS ?? 2),
  rssRuns = Number(process.env.BENCH_RSS_RUNS ?? 2000),
  pausedRuns = Number(process.env.BENCH_PAUSED_RUNS ?? 10_000),
  connectionString = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test",
} = {}) {
  const database = await privateDatabase(connectionString);
  const env = database.url ? { BENCH_DATABASE_URL: database.url } : {};
  const systems = {};
  try {
    for (const system of Object.keys(SYSTEMS)) {
      if (system === "postgres" && !database.url) {
        systems[system] = { label: SYSTEMS[system].label, skipped: `PostgreSQL unavailable: ${database.skipped}` };
        continue;
      }
      const warmup = system === "postgres" || system === "file" ? 100 : 500;
      const { levels } = await inChild({ kind: "throughput", system, levels: LEVELS, seconds, warmup }, env);
      const rss = await inChild({ kind: "rss", system, runs: rssRuns, concurrency: 50 }, env);
      systems[system] = { label: SYSTEMS[system].label, levels, peakRssBytes: rss.peakRssBytes };
      if (system === "postgres") systems[system].commits = await inChild({ kind: "commits", runs: 300, connectionString: database.url }, env);
    }
    const paused = await inChild({ kind: "paused", runs: pausedRuns }, {}, ["--expose-gc"]);
    const disk = await inChild({ kind: "disk", ms: seconds * 1000 });
    return { seconds, levels: LEVELS, systems, paused, disk };
  } finally {
    await database.drop?.();
  }
}

const at = (system, concurrency) => system.levels?.find((l) => l.concurrency === concurrency)?.runsPerSecond;

/** The issue's targets as ratios of this run's figures; each { value, target, met }. */
export function workloadTargets(result) {
  const { systems, paused } = result;
  const targets = {};
  const ratio = (name, a, b, min) => {
    if (a === undefined || b === undefined) return;
    targets[name] = { value: a / b, target: `>= ${min}`, met: a / b >= min };
  };
  const { memory, file, postgres } = systems;
  const pi = systems["pi-agent-core"];
  for (const c of LEVELS) ratio(`memory / pi-agent-core, ${c === 1 ? "sequential" : `${c} concurrent`}`, at(memory, c), at(pi, c), 2);
  ratio("file / memory, sequential", at(file, 1), at(memory, 1), 0.2);
  ratio("file / memory, 50 concurrent", at(file, 50), at(memory, 50), 0.5);
  ratio("postgres / memory, sequential", at(postgres, 1), at(memory, 1), 0.15);
  ratio("postgres / memory, 16 concurrent", at(postgres, 16), at(postgres && memory, 16), 0.5);
  ratio("postgres / memory, 50 concurrent", at(postgres, 50), at(memory, 50), 0.5);
  if (postgres?.commits) {
    // A commit costs a WAL flush the run waits for; read-only statements (each its own transaction, counted in
    // commitsPerRun) write no WAL, and the lease's release commits without waiting for its flush.
    const { walSyncsPerRun } = postgres.commits;
    // To one decimal: the server makes a few flushes of its own per measured phase (the WAL writer
    // flushing the last release, autovacuum), a hundredth per run over 300 runs.
    targets["postgres commits waiting for a WAL flush per run (WAL fdatasyncs, sequential)"] = { value: walSyncsPerRun, target: "<= 6", met: Math.round(walSyncsPerRun * 10) / 10 <= 6 };
    targets["postgres statements per run"] = { value: postgres.commits.statementsPerRun, target: "<= 12", met: postgres.commits.statementsPerRun <= 12 };
  }
  if (memory?.peakRssBytes && pi?.peakRssBytes) {
    targets["peak RSS at 50 concurrent, memory / pi-agent-core"] = { value: memory.peakRssBytes / pi.peakRssBytes, target: "<= 1", met: memory.peakRssBytes <= pi.peakRssBytes };
  }
  // A few hundred bytes of noise per run is heap that moved, not heap held.
  targets["host heap per paused run (bytes)"] = { value: paused.hostBytesPerRun, target: "<= 64", met: paused.hostBytesPerRun <= 64 };
  return targets;
}

const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

export function printWorkloadBench(result) {
  const { systems, paused, levels } = result;
  console.log(`workload: scripted model, 3 model turns + 2 tool calls per run; runs/s (${result.seconds}s per level), each system in its own process`);
  console.log(`  ${"system".padEnd(34)} ${levels.map((c) => (c === 1 ? "seq" : `${c} conc`).padStart(9)).join(" ")}  peak RSS  per run`);
  for (const system of Object.values(systems)) {
    if (system.skipped) {
      console.log(`  ${system.label.padEnd(34)} skipped: ${system.skipped}`);
      continue;
    }
    const seq = system.levels[0];
    const extra = [];
    if (seq.syncsPerRun > 0) extra.push(`fdatasyncs ${system.levels.map((l) => l.syncsPerRun.toFixed(1)).join("/")}`);
    if (system.commits) {
      const { statementsPerRun, commitsPerRun, writeTransactionsPerRun, walSyncsPerRun } = system.commits;
      extra.push(`${statementsPerRun.toFixed(1)} statements, ${commitsPerRun.toFixed(1)} transactions (${writeTransactionsPerRun.toFixed(1)} writing), ${walSyncsPerRun.toFixed(1)} WAL fdatasyncs`);
    }
    console.log(`  ${system.label.padEnd(34)} ${system.levels.map((l) => l.runsPerSecond.toFixed(0).padStart(9)).join(" ")}  ${mb(system.peakRssBytes).padStart(8)}  ${extra.join("; ")}`);
  }
  const { disk } = result;
  const file = systems.file?.levels?.[0];
  if (disk) {
    console.log(`  disk: ${disk.syncsPerSecond.toFixed(0)} fdatasyncs/s for one writer (${disk.msPerSync.toFixed(2)} ms each)` +
      (file ? `; file state at ${file.syncsPerRun.toFixed(1)} per sequential run can do at most ${(disk.syncsPerSecond / file.syncsPerRun).toFixed(0)} runs/s` : "") +
      (file && systems.memory?.levels ? ` (${((disk.syncsPerSecond / file.syncsPerRun / systems.memory.levels[0].runsPerSecond) * 100).toFixed(0)}% of in-memory sequential)` : ""));
  }
  console.log(`  paused runs: ${paused.runs} held ${(paused.hostHeapBytes / 1024).toFixed(0)} KB of host heap (${paused.hostBytesPerRun.toFixed(0)} B/run); their in-memory state rows ${mb(paused.stateHeapBytes)}`);
  console.log("  targets (ratios within this run):");
  for (const [name, { value, target, met }] of Object.entries(workloadTargets(result))) {
    console.log(`    ${met ? "met " : "MISS"} ${name.padEnd(52)} ${value.toFixed(2).padStart(8)}  (${target})`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) printWorkloadBench(await runWorkloadBench());
