// `npm run bench`: every benchmark, each printed beside a baseline measured in the same run.
// The figures of every section are also written as JSON (BENCH_RESULTS, default
// bench/results/latest.json) for CI to keep. A section is { name, run, print }:
// add one by appending it to SECTIONS.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { printCliStartupBench, runCliStartupBench } from "./cli-startup.js";
import { printHttpBench, runHttpBench } from "./http-bench.js";
import { printKernelBench, runKernelBench } from "./kernel-bench.js";
import { printWorkloadBench, runWorkloadBench, workloadTargets } from "./workload-bench.js";

const SECTIONS = [
  { name: "workload", run: runWorkloadBench, print: printWorkloadBench, targets: workloadTargets },
  { name: "kernel", run: runKernelBench, print: printKernelBench },
  { name: "http", run: runHttpBench, print: printHttpBench, targets: httpTargets },
  {
    name: "postgres",
    run: async () => {
      const { runPostgresBench } = await import("../plugins/postgres/bench/postgres-bench.js");
      return runPostgresBench();
    },
    print: () => undefined, // runPostgresBench prints as it goes
  },
  { name: "cli", run: () => runCliStartupBench(), print: printCliStartupBench, targets: cliTargets },
];

/** Each command's median start-up against its target in milliseconds (the ratio to `node -e 0` is printed beside it). */
function cliTargets({ commands }) {
  return Object.fromEntries(
    Object.entries(commands).map(([name, figure]) => [`assembly-line ${name} start-up (ms, median wall)`, { value: Math.round(figure.medianMs), target: `<= ${figure.targetMs}`, met: figure.withinTarget }]),
  );
}

/**
 * The HTTP host may add at most 25% over the runtime behind node:http, at every level: judged
 * on the merged rates; the median of the slice pairs is kept beside it, as the figure a load
 * spike in one slice moves least.
 */
function httpTargets({ levels }) {
  return Object.fromEntries(
    levels.map(({ clients, hostOverhead, hostOverheadMedianOfSlices }) => [
      `http host overhead over runtime.run() behind node:http, ${clients} client${clients === 1 ? "" : "s"}`,
      { value: hostOverhead, target: "<= 0.25", met: hostOverhead <= 0.25, medianOfSlicePairs: hostOverheadMedianOfSlices },
    ]),
  );
}

const only = process.env.BENCH_ONLY?.split(",");
const output = resolve(process.env.BENCH_RESULTS ?? fileURLToPath(new URL("./results/latest.json", import.meta.url)));
const report = { startedAt: new Date().toISOString(), node: process.version, platform: `${process.platform}-${process.arch}`, sections: {}, targets: {} };

for (const section of SECTIONS) {
  if (only && !only.includes(section.name)) continue;
  try {
    const result = await section.run();
    section.print(result);
    report.sections[section.name] = result;
    Object.assign(report.targets, section.targets?.(result) ?? {});
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
    console.log(`${section.name}: skipped (${reason})`);
    report.sections[section.name] = { skipped: reason };
  }
  console.log("");
}

mkdirSync(dirname(output), { recursive: true });
writeFileSync(output, `${JSON.stringify(report, null, 2)}\n`);
console.log(`figures written to ${output}`);
