// The workload of bench/workload/agent.js (3 model turns, 2 tool calls per run) on
// every system, each in a child process of its own (bench/workload/child.js):
// runs/s sequential, 16 and 50 concurrent; syncs per run (file state: synced writes or fdatasyncs);
// statements and commits per run (PostgreSQL, a private database made and dropped
// here); peak RSS at 50 concurrent; heap held for 10,000 paused runs; the disk's and
// the PostgreSQL server's own commit ceilings, which bound the durable systems, and the
// in-memory state's own ceiling (one run's writes replayed with no runtime, plus the bare loop). Ratios
// are the point: every figure is measured in the same run on the same machine, and the
// systems take turns within each level (BENCH_SLICES slices), so load from elsewhere on
// the machine falls on all of them alike.
//
//   node bench/workload-bench.js          (after `npx tsc -b`)
//
// BENCH_SECONDS (default 2) per level and system; BENCH_SLICES (default 4);
// DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test).
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

/**
 * A system served by a child of its own (the "serve" job): `measure(concurrency, ms)` runs one slice
 * of a level there and resolves with its figures.
 */
function servedSystem(system, env, warmup) {
  const child = fork(CHILD, [JSON.stringify({ kind: "serve", system, warmup })], { env: { ...process.env, ...env }, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let waiting;
  let failure;
  const settle = (fn) => {
    const current = waiting;
    waiting = undefined;
    current && fn(current);
  };
  child.on("message", (message) => {
    if (message.ready) settle(({ resolve }) => resolve(message.describe));
    else if (message.measured) settle(({ resolve }) => resolve(message.measured));
    else if (message.ok === false) failure = new Error(message.error);
  });
  child.once("exit", (code) => {
    failure ??= new Error(`child serving ${system} exited with ${code}`);
    settle(({ reject }) => reject(failure));
  });
  const next = () => (failure ? Promise.reject(failure) : new Promise((resolve, reject) => (waiting = { resolve, reject })));
  const ready = next();
  return {
    ready,
    measure: (concurrency, ms) => {
      const answer = next();
      child.send({ concurrency, ms });
      return answer;
    },
    close: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.send({ close: true });
    }),
  };
}

/**
 * Runs/s of every system at every level, the systems taking turns: each level's time is cut into
 * `slices`, and in each slice every system runs once (the order rotating), so a change in the machine's
 * speed (other work on a shared host) falls on all of them alike and the ratios between them hold.
 */
async function interleavedThroughput(systems, { seconds, slices, env }) {
  const served = {};
  const described = {};
  try {
    for (const system of systems) {
      served[system] = servedSystem(system, env, system === "postgres" || system === "file" ? 100 : 500);
      described[system] = await served[system].ready;
    }
    const levels = Object.fromEntries(systems.map((system) => [system, []]));
    for (const concurrency of LEVELS) {
      const totals = Object.fromEntries(systems.map((system) => [system, { runs: 0, seconds: 0, syncs: 0, statements: 0, clientCommits: 0 }]));
      for (let slice = 0; slice < slices; slice += 1) {
        const order = systems.map((_, index) => systems[(index + slice) % systems.length]);
        for (const system of order) {
          const measured = await served[system].measure(concurrency, (seconds * 1000) / slices);
          const total = totals[system];
          total.runs += measured.runs;
          total.seconds += measured.runs / measured.runsPerSecond;
          total.syncs += measured.syncsPerRun * measured.runs;
          total.statements += measured.statementsPerRun * measured.runs;
          total.clientCommits += measured.clientCommitsPerRun * measured.runs;
        }
      }
      for (const system of systems) {
        const { runs, seconds: spent, syncs, statements, clientCommits } = totals[system];
        levels[system].push({
          concurrency, runs, runsPerSecond: runs / spent,
          syncsPerRun: syncs / runs, statementsPerRun: statements / runs, clientCommitsPerRun: clientCommits / runs,
        });
      }
    }
    return { levels, described };
  } finally {
    await Promise.all(Object.values(served).map((server) => server.close()));
  }
}

/**
 * Peak RSS of each system: `processes` processes each (the systems taking turns, as in the throughput
 * levels), every one running `runs` runs at 50 concurrent; the median process's figures, with every
 * process's peak beside them (one process's peak moves by several MB between runs of the same code).
 */
async function peakRss(systems, { runs, processes, env }) {
  // The floor's rows are one real run's, taken in a process of their own so the floor's holds nothing of Assembly Line.
  const rows = systems.includes("pi-agent-core-rows") ? await inChild({ kind: "runRows", system: "memory" }, env) : undefined;
  const samples = Object.fromEntries(systems.map((system) => [system, []]));
  for (let round = 0; round < processes; round += 1) {
    for (const system of systems) samples[system].push(await inChild({ kind: "rss", system, runs, concurrency: 50, rows }, env));
  }
  return Object.fromEntries(
    Object.entries(samples).map(([system, list]) => {
      const median = list.slice().sort((a, b) => a.peakRssBytes - b.peakRssBytes)[Math.floor((list.length - 1) / 2)];
      return [system, {
        peakRssBytes: median.peakRssBytes,
        peakRssSamples: list.map((sample) => sample.peakRssBytes),
        heapDuringPeak: { runs: median.runs, oldSpaceGrowthBytes: median.oldSpaceGrowthBytes, minorCollections: median.minorCollections, majorCollections: median.majorCollections },
      }];
    }),
  );
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
  slices = Number(process.env.BENCH_SLICES ?? 4),
  rssRuns = Number(process.env.BENCH_RSS_RUNS ?? 2000),
  peakProcesses = Number(process.env.BENCH_PEAK_PROCESSES ?? 3),
  pausedRuns = Number(process.env.BENCH_PAUSED_RUNS ?? 10_000),
  connectionString = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test",
} = {}) {
  const database = await privateDatabase(connectionString);
  const env = database.url ? { BENCH_DATABASE_URL: database.url } : {};
  const systems = {};
  try {
    const skipped = (system) => SYSTEMS[system].unavailable ?? (system === "postgres" && !database.url ? `PostgreSQL unavailable: ${database.skipped}` : undefined);
    const measured = Object.keys(SYSTEMS).filter((system) => !skipped(system) && !SYSTEMS[system].peakOnly);
    const { levels, described } = await interleavedThroughput(measured, { seconds, slices, env });
    const peaks = await peakRss(Object.keys(SYSTEMS).filter((system) => !skipped(system) && !SYSTEMS[system].ceiling), { runs: rssRuns, processes: peakProcesses, env });
    for (const system of Object.keys(SYSTEMS)) {
      if (skipped(system)) {
        systems[system] = { label: SYSTEMS[system].label, skipped: skipped(system) };
        continue;
      }
      if (SYSTEMS[system].ceiling) {
        systems[system] = { label: SYSTEMS[system].label, ceiling: true, levels: levels[system], ...described[system] };
        continue;
      }
      systems[system] = { label: SYSTEMS[system].label, ...(levels[system] ? { levels: levels[system] } : { peakOnly: true }), ...peaks[system] };
      // The rows an in-memory state must hold for those runs are part of its peak; measured apart, as the paused job does.
      if (system === "memory") systems[system].stateRowsBytes = (await inChild({ kind: "stateRows", runs: rssRuns, concurrency: 50 }, env, ["--expose-gc"])).stateRowsBytes;
      if (system === "postgres") systems[system].commits = await inChild({ kind: "commits", runs: 300, connectionString: database.url }, env);
    }
    const paused = await inChild({ kind: "paused", runs: pausedRuns }, {}, ["--expose-gc"]);
    const disk = await inChild({ kind: "disk", ms: seconds * 1000 });
    const postgresCeiling = database.url ? await inChild({ kind: "postgresCeiling", connectionString: database.url, levels: LEVELS, ms: seconds * 1000 }) : undefined;
    return { seconds, slices, levels: LEVELS, systems, paused, disk, postgresCeiling };
  } finally {
    await database.drop?.();
  }
}

/**
 * The most runs/s of two kinds of work one run does in series on the one thread (a rate each, measured apart):
 * their times per run add.
 */
const inSeries = (...runsPerSecond) => 1 / runsPerSecond.reduce((sum, rate) => sum + 1 / rate, 0);

const at = (system, concurrency) => system?.levels?.find((l) => l.concurrency === concurrency)?.runsPerSecond;
const levelName = (c) => (c === 1 ? "sequential" : `${c} concurrent`);

/**
 * PostgreSQL's ceiling at each level: one-row commits/s (the postgresCeiling job) over the commits per run
 * that wait for a WAL flush. Empty when either is unknown.
 */
function postgresBounds(result) {
  const postgres = result.systems.postgres;
  if (!result.postgresCeiling || !postgres?.commits) return [];
  // To one decimal, as the target on it is: the server's own few flushes per phase are not the runs'.
  const flushedCommitsPerRun = Math.round(postgres.commits.walSyncsPerRun * 10) / 10;
  return result.postgresCeiling.levels.map(({ concurrency, commitsPerSecond }) => ({
    concurrency, commitsPerSecond, flushedCommitsPerRun, maxRunsPerSecond: commitsPerSecond / flushedCommitsPerRun,
  }));
}

/** How far a ceiling measured apart may be off (a share of it), for `provenImpossible`. */
const CEILING_NOISE = 0.05;

/** The issue's targets as ratios of this run's figures; each { value, target, met }. */
export function workloadTargets(result) {
  const { systems, paused } = result;
  const targets = {};
  const ratio = (name, a, b, min) => {
    if (a === undefined || b === undefined) return;
    return (targets[name] = { value: a / b, target: `>= ${min}`, met: a / b >= min });
  };
  // The most runs/s a ceiling measured apart (the disk's, the server's, the in-memory state's) allows, as a
  // ratio to the target's baseline: below the goal, the target is out of reach on this machine however fast
  // the runtime gets.
  const bound = (target, maxRunsPerSecond, baselineRunsPerSecond, min, reason) => {
    if (!target || !(maxRunsPerSecond > 0) || !baselineRunsPerSecond) return;
    const maxRatio = maxRunsPerSecond / baselineRunsPerSecond;
    target.bound = { maxRunsPerSecond, maxRatio, reason };
    // A ceiling is measured apart from the figure, at another moment, so either may be off by the machine's noise:
    // the target is out of reach when even a ceiling CEILING_NOISE higher stays below the goal, and the figure is
    // within that (a runtime at its bound lands on it, a hair either side). A figure further above its ceiling
    // means the machine changed between the two measurements: nothing is proven then.
    const noisyCeiling = maxRatio * (1 + CEILING_NOISE);
    target.provenImpossible = noisyCeiling < min && target.value <= noisyCeiling;
  };
  const { memory, file, postgres } = systems;
  const pi = systems["pi-agent-core"];
  for (const c of LEVELS) {
    const target = ratio(`memory / pi-agent-core, ${levelName(c)}`, at(memory, c), at(pi, c), 2);
    const writes = systems["memory-writes"];
    const writesOnly = at(writes, c);
    const floor = at(systems.bare, c);
    if (writesOnly && floor) {
      // Any durable run does the workload itself (at best the bare loop) and its writes. Both are CPU work on
      // the one JavaScript thread, so their times per run add: no runtime can overlap them.
      const { eventsPerRun, callsPerRun } = writes;
      const maxRuns = inSeries(writesOnly, floor);
      bound(target, maxRuns, at(pi, c), 2,
        `One run's writes alone (${Object.entries(callsPerRun).map(([name, n]) => `${n} ${name}`).join(", ")}; ${eventsPerRun} events), ` +
          `replayed on InMemoryStateAdapter with no runtime around them, reach ${writesOnly.toFixed(0)} runs/s ${levelName(c)}, ` +
          `the workload alone (the bare loop) ${floor.toFixed(0)}; a run does both on one thread, so at most ${maxRuns.toFixed(0)} runs/s; ` +
          `2x pi-agent-core is ${(2 * at(pi, c)).toFixed(0)}`);
    }
  }
  const fileSequential = ratio("file / memory, sequential", at(file, 1), at(memory, 1), 0.2);
  const fileSyncsPerRun = file?.levels?.[0]?.syncsPerRun;
  if (result.disk && fileSyncsPerRun > 0 && at(memory, 1)) {
    // A sequential run on the file state does what one on the in-memory state does (the same runtime, the same
    // tables held in memory) and, at each durable boundary, waits for its sync before the step that depends on
    // it: the waits add to the run's own time, nothing of the run can go on meanwhile.
    const syncSeconds = fileSyncsPerRun / result.disk.syncsPerSecond;
    const maxRuns = inSeries(at(memory, 1), 1 / syncSeconds);
    bound(fileSequential, maxRuns, at(memory, 1), 0.2,
      `The disk here does at most ${result.disk.syncsPerSecond.toFixed(0)} syncs/s for one writer; ${fileSyncsPerRun.toFixed(1)} per sequential run ` +
        `take ${(syncSeconds * 1000).toFixed(2)} ms, waited for in series on top of the in-memory run's ${(1000 / at(memory, 1)).toFixed(2)} ms: at most ${maxRuns.toFixed(0)} runs/s`);
  }
  const fileConcurrent = ratio("file / memory, 50 concurrent", at(file, 50), at(memory, 50), 0.5);
  const inMemoryFolder = at(systems["file-memory-folder"], 50);
  // `ratio` gave a target only with both figures, so in-memory's is there.
  if (fileConcurrent && inMemoryFolder) {
    // Not a proof: what the file state's own work allows when a sync costs next to nothing. Above the goal,
    // the disk is what keeps the target out of reach here; below it, the file state's own work does.
    const freeRatio = inMemoryFolder / at(memory, 50);
    fileConcurrent.withFreeSyncs = {
      runsPerSecond: inMemoryFolder,
      ratio: freeRatio,
      reason: `the file state with its folder in memory (a sync costs next to nothing) runs ${inMemoryFolder.toFixed(0)} runs/s at 50 concurrent, ` +
        `${freeRatio.toFixed(2)} of in-memory: what its own work allows, whatever the disk`,
    };
  }
  const ceilings = postgresBounds(result);
  for (const [c, min] of [[1, 0.15], [16, 0.5], [50, 0.5]]) {
    const target = ratio(`postgres / memory, ${levelName(c)}`, at(postgres, c), at(memory, c), min);
    const ceiling = ceilings.find((l) => l.concurrency === c);
    if (ceiling) {
      bound(target, ceiling.maxRunsPerSecond, at(memory, c), min,
        `PostgreSQL on this machine commits at most ${ceiling.commitsPerSecond.toFixed(0)} one-row transactions/s on ${c} connection${c === 1 ? "" : "s"}; ` +
          `${ceiling.flushedCommitsPerRun.toFixed(1)} flushed commits per run cap runs/s at ${ceiling.maxRunsPerSecond.toFixed(0)}`);
    }
  }
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
    const target = { value: memory.peakRssBytes / pi.peakRssBytes, target: "<= 1", met: memory.peakRssBytes <= pi.peakRssBytes };
    const floor = systems["pi-agent-core-rows"];
    if (floor?.peakRssBytes) {
      // pi-agent-core keeps nothing once a run ends; the in-memory state keeps every run's rows in this heap,
      // written while the run goes on (a record is stored before the step that depends on it). The floor is
      // pi-agent-core with those rows and no runtime: above pi-agent-core's own peak, no runtime that keeps
      // them can reach the target.
      const minRatio = floor.peakRssBytes / pi.peakRssBytes;
      target.floor = {
        peakRssBytes: floor.peakRssBytes, minRatio,
        reason: `pi-agent-core's Agent with the rows the in-memory state keeps for each run (${memory.stateRowsBytes === undefined ? "" : `${mb(memory.stateRowsBytes)} for these runs, `}` +
          `as flat JSON text) and nothing of Assembly Line peaks at ${mb(floor.peakRssBytes)}, ${minRatio.toFixed(2)}x pi-agent-core's ${mb(pi.peakRssBytes)}`,
      };
      target.floor.figureOverFloor = memory.peakRssBytes / floor.peakRssBytes;
      // Proven only when every floor process peaked above every pi-agent-core process: not one process's noise.
      const samples = (system) => system.peakRssSamples ?? [system.peakRssBytes];
      target.provenImpossible = Math.min(...samples(floor)) > Math.max(...samples(pi));
    }
    const [ours, theirs] = [memory.heapDuringPeak, pi.heapDuringPeak];
    if (ours && theirs) {
      // The peak follows the old generation: objects alive across two young collections are promoted
      // there and stay until a major collection, which need not come before the peak.
      target.oldSpaceGrowth = {
        memoryBytesPerRun: ours.oldSpaceGrowthBytes / ours.runs, piBytesPerRun: theirs.oldSpaceGrowthBytes / theirs.runs,
        memoryMajorCollections: ours.majorCollections, piMajorCollections: theirs.majorCollections,
      };
    }
    targets["peak RSS at 50 concurrent, memory / pi-agent-core"] = target;
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
    const extra = [];
    if (system.levels?.[0].syncsPerRun > 0) extra.push(`syncs ${system.levels.map((l) => l.syncsPerRun.toFixed(1)).join("/")}`);
    if (system.commits) {
      const { statementsPerRun, commitsPerRun, writeTransactionsPerRun, walSyncsPerRun } = system.commits;
      extra.push(`${statementsPerRun.toFixed(1)} statements, ${commitsPerRun.toFixed(1)} transactions (${writeTransactionsPerRun.toFixed(1)} writing), ${walSyncsPerRun.toFixed(1)} WAL fdatasyncs`);
    }
    if (system.heapDuringPeak) {
      const { runs, oldSpaceGrowthBytes, majorCollections } = system.heapDuringPeak;
      extra.push(`peak: old generation +${mb(oldSpaceGrowthBytes)} over ${runs} runs, ${majorCollections} major GC`);
    }
    if (system.peakRssSamples?.length > 1) extra.push(`peak RSS ${system.peakRssSamples.map(mb).join(" / ")} in ${system.peakRssSamples.length} processes (median)`);
    const rss = system.peakRssBytes === undefined ? "" : mb(system.peakRssBytes);
    const rates = system.levels ? system.levels.map((l) => l.runsPerSecond.toFixed(0).padStart(9)).join(" ") : "(peak RSS only)".padStart(levels.length * 10 - 1);
    console.log(`  ${system.label.padEnd(34)} ${rates}  ${rss.padStart(8)}  ${extra.join("; ")}`);
  }
  const { disk } = result;
  const file = systems.file?.levels?.[0];
  if (disk) {
    console.log(`  disk: ${disk.syncsPerSecond.toFixed(0)} syncs/s for one writer (${disk.msPerSync.toFixed(2)} ms each)` +
      (file ? `; file state at ${file.syncsPerRun.toFixed(1)} per sequential run can do at most ${(disk.syncsPerSecond / file.syncsPerRun).toFixed(0)} runs/s` : "") +
      (file && systems.memory?.levels ? ` (${((disk.syncsPerSecond / file.syncsPerRun / systems.memory.levels[0].runsPerSecond) * 100).toFixed(0)}% of in-memory sequential; ` +
        `${((inSeries(systems.memory.levels[0].runsPerSecond, disk.syncsPerSecond / file.syncsPerRun) / systems.memory.levels[0].runsPerSecond) * 100).toFixed(0)}% with the in-memory run's own time added)` : ""));
  }
  const ceilings = postgresBounds(result);
  if (ceilings.length > 0) {
    const memory = systems.memory;
    const list = (f) => ceilings.map(f).join(" / ");
    console.log(`  postgres: ${list((l) => l.commitsPerSecond.toFixed(0))} one-row commits/s (${levels.map((c) => (c === 1 ? "seq" : c)).join("/")}); ` +
      `at ${ceilings[0].flushedCommitsPerRun.toFixed(1)} flushed commits per run at most ${list((l) => l.maxRunsPerSecond.toFixed(0))} runs/s` +
      (memory?.levels ? ` (${list((l) => `${((l.maxRunsPerSecond / at(memory, l.concurrency)) * 100).toFixed(0)}%`)} of in-memory)` : ""));
  }
  if (systems["memory-writes"]?.levels && systems["pi-agent-core"]?.levels) {
    const pi = systems["pi-agent-core"];
    const list = (f) => systems["memory-writes"].levels.map(f).join(" / ");
    console.log(`  in-memory state: one run's writes alone (no runtime) ${list((l) => l.runsPerSecond.toFixed(0))} runs/s ` +
      `(${list((l) => `${(l.runsPerSecond / at(pi, l.concurrency)).toFixed(2)}x`)} pi-agent-core)`);
    if (systems.bare?.levels) {
      const most = (l) => inSeries(l.runsPerSecond, at(systems.bare, l.concurrency));
      console.log(`  writes plus the bare loop, the least a durable run does: at most ${list((l) => most(l).toFixed(0))} runs/s ` +
        `(${list((l) => `${(most(l) / at(pi, l.concurrency)).toFixed(2)}x`)} pi-agent-core)`);
    }
  }
  console.log(`  paused runs: ${paused.runs} held ${(paused.hostHeapBytes / 1024).toFixed(0)} KB of host heap (${paused.hostBytesPerRun.toFixed(0)} B/run); their in-memory state rows ${mb(paused.stateHeapBytes)}`);
  console.log("  targets (ratios within this run):");
  for (const [name, { value, target, met, bound, floor, provenImpossible, withFreeSyncs }] of Object.entries(workloadTargets(result))) {
    const ceiling = !met && bound ? `  ceiling here: ${bound.maxRatio.toFixed(2)}${provenImpossible ? ", proven impossible" : ""}` : "";
    const rows = !met && floor
      ? `  floor here (pi-agent-core + the state's rows): ${floor.minRatio.toFixed(2)}${provenImpossible ? ", proven impossible" : ""}; figure ${floor.figureOverFloor.toFixed(2)}x the floor`
      : "";
    const freeSyncs = !met && withFreeSyncs ? `  with syncs that cost nothing (folder in memory): ${withFreeSyncs.ratio.toFixed(2)}` : "";
    console.log(`    ${met ? "met " : "MISS"} ${name.padEnd(52)} ${value.toFixed(2).padStart(8)}  (${target})${ceiling}${rows}${freeSyncs}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) printWorkloadBench(await runWorkloadBench());
