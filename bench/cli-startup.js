// How fast `assembly-line` starts: --help, --version, `runs list` on an agent
// with runs, and `run` on a scripted model (the notes example, which builds,
// runs one model turn and pauses for approval), each as a fresh process, beside
// `node -e 0` measured in the same run: the baseline every figure is a ratio of.
//
//   npm run bench:cli        (builds first; or node bench/cli-startup.js after `npx tsc -b`)
//
// Bounded: 5 commands x (1 warm-up + CLI_BENCH_RUNS, default 9) processes, about 10 s.
// Wall time is what a person waits, and what the targets are stated in; on a busy machine
// it grows with the load (node -e 0 too), so each process's own CPU time is printed beside it.
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
const example = join(root, "examples/notes-agent");

/** The targets the command line is held to on the reference machine (2 shared cores). */
export const CLI_STARTUP_TARGETS_MS = { help: 250, version: 250, "runs list": 250, run: 600 };

// Each process reports the CPU time it used (user + system) as it exits: a figure other
// work on the machine changes far less than wall time. The baseline carries the same hook.
const CPU_MARK = "cli-bench-cpu-us ";
const CPU_HOOK = `data:text/javascript,${encodeURIComponent(`process.on("exit", () => { const u = process.cpuUsage(); process.stderr.write("\\n${CPU_MARK}" + (u.user + u.system) + "\\n"); });`)}`;

function timeOnce(args, cwd, expectStatus) {
  const started = performance.now();
  const child = spawnSync(process.execPath, ["--import", CPU_HOOK, ...args], { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", OPENAI_API_KEY: "" } });
  const ms = performance.now() - started;
  if (child.status !== expectStatus) throw new Error(`${args.join(" ")} exited ${child.status}, expected ${expectStatus}:\n${child.stdout}\n${child.stderr}`);
  const reported = child.stderr.split("\n").find((line) => line.startsWith(CPU_MARK));
  return { ms, cpuMs: reported ? Number(reported.slice(CPU_MARK.length)) / 1000 : Number.NaN };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function measure(args, cwd, runs, expectStatus = 0) {
  timeOnce(args, cwd, expectStatus); // warm the file cache
  const samples = Array.from({ length: runs }, () => timeOnce(args, cwd, expectStatus));
  const wall = samples.map((sample) => sample.ms);
  return { medianMs: median(wall), minMs: Math.min(...wall), maxMs: Math.max(...wall), cpuMedianMs: median(samples.map((sample) => sample.cpuMs)) };
}

/** Median wall time of each command over `runs` fresh processes, and its ratio to `node -e 0`. */
export async function runCliStartupBench({ runs = Number(process.env.CLI_BENCH_RUNS ?? 9) } = {}) {
  const work = mkdtempSync(join(tmpdir(), "al-cli-bench-"));
  try {
    const agentDir = join(work, "notes-agent");
    cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
    const script = "scripted:conversations/remember-milk.json";
    // One run on record, so `runs list` lists something.
    timeOnce([bin, "run", ".", "-m", "Remember to buy milk", "--model", script], agentDir, 3);

    const baseline = measure(["-e", "0"], agentDir, runs);
    const commands = {
      help: measure([bin, "--help"], agentDir, runs),
      version: measure([bin, "--version"], agentDir, runs),
      "runs list": measure([bin, "runs", "list"], agentDir, runs),
      // The notes conversation pauses for approval: exit 3.
      run: measure([bin, "run", ".", "-m", "Remember to buy milk", "--model", script], agentDir, runs, 3),
    };
    const figures = Object.fromEntries(
      Object.entries(commands).map(([name, result]) => [
        name,
        {
          ...result,
          ratio: result.medianMs / baseline.medianMs,
          cpuRatio: result.cpuMedianMs / baseline.cpuMedianMs,
          targetMs: CLI_STARTUP_TARGETS_MS[name],
          withinTarget: result.medianMs <= CLI_STARTUP_TARGETS_MS[name],
          cpuWithinTarget: result.cpuMedianMs <= CLI_STARTUP_TARGETS_MS[name],
        },
      ]),
    );
    return { runs, loadAverage: loadavg()[0], baseline, commands: figures };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export function printCliStartupBench({ runs, loadAverage, baseline, commands }) {
  console.log(`cli start-up: median of ${runs} fresh processes each (wall, and the process's own CPU time); baseline: node -e 0; load average ${loadAverage.toFixed(1)}`);
  console.log(`  ${"node -e 0".padEnd(36)} ${baseline.medianMs.toFixed(0).padStart(5)} ms wall  ${baseline.cpuMedianMs.toFixed(0).padStart(4)} ms cpu`);
  for (const [name, figure] of Object.entries(commands)) {
    const label = name === "run" ? "run (scripted model)" : name === "help" ? "--help" : name === "version" ? "--version" : name;
    console.log(
      `  ${`assembly-line ${label}`.padEnd(36)} ${figure.medianMs.toFixed(0).padStart(5)} ms wall  ${figure.cpuMedianMs.toFixed(0).padStart(4)} ms cpu  ${figure.ratio.toFixed(1).padStart(4)}x node -e 0 (cpu ${figure.cpuRatio.toFixed(1)}x)  min ${figure.minMs.toFixed(0)}, max ${figure.maxMs.toFixed(0)}; target ${figure.targetMs} ms: wall ${figure.withinTarget ? "met" : "MISSED"}, cpu ${figure.cpuWithinTarget ? "met" : "MISSED"}`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) printCliStartupBench(await runCliStartupBench());
