// Kernel overhead: a scripted run of 3 model turns and 2 tool calls, in memory,
// against a bare loop calling the same two tool functions (the baseline).
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";

// defaultEnabled: the scripted model calls both tools by name, and an authored tool is otherwise deferred.
const TOOL = (name) => `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "${name}",
  inputSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"] },
  defaultEnabled: true,
  async execute(input) { return { ${name}: input.value.length }; },
});
`;

/** Call `once` back to back for `ms` (`concurrency` loops at a time) and time the calls that started within it. */
async function timeFor(label, ms, once, concurrency = 1) {
  let count = 0;
  const started = performance.now();
  const until = started + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await once();
        count += 1;
      }
    }),
  );
  const elapsed = performance.now() - started;
  return { label, count, ms: elapsed, perSecond: (count / elapsed) * 1000, usPerItem: (elapsed * 1000) / count };
}

/**
 * Timed, not counted: each measurement runs for BENCH_SECONDS (default 2) after a warm-up of as long. With
 * 50 runs of warm-up and 400 counted, the JIT was still compiling while they ran: 550 µs a run sequentially
 * against about 115 µs once warm (the workload section's in-memory figure).
 */
export async function runKernelBench({ seconds = Number(process.env.BENCH_SECONDS ?? 2), concurrency = 50 } = {}) {
  const ms = seconds * 1000;
  const dir = mkdtempSync(join(tmpdir(), "al-bench-"));
  try {
    mkdirSync(join(dir, "tools"));
    writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "bench/model" });\n`);
    writeFileSync(join(dir, "tools/first.ts"), TOOL("first"));
    writeFileSync(join(dir, "tools/second.ts"), TOOL("second"));
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    const harness = scriptedHarness({
      turns: [
        { toolCalls: [{ name: "first", input: { value: "alpha" } }] },
        { toolCalls: [{ name: "second", input: { value: "beta" } }] },
        { text: "done" },
      ],
    });
    const runtime = new OpenEveRuntime({ ...bundle, state: new InMemoryStateAdapter(), agentHarness: harness, logger: noopLogger(), maxConcurrentRuns: concurrency, maxQueuedRuns: concurrency });
    const first = bundle.sourceBundle.tools.first;
    const second = bundle.sourceBundle.tools.second;
    const bareCalls = async () => {
      JSON.stringify(await first.execute({ value: "alpha" }, {}));
      JSON.stringify(await second.execute({ value: "beta" }, {}));
    };
    const run = () => runtime.run({ message: "go" });

    await timeFor("warm-up", ms, bareCalls);
    await timeFor("warm-up", ms, run, concurrency);
    const baseline = await timeFor("bare loop (2 tool calls)", ms, bareCalls);
    const sequential = await timeFor("kernel, sequential", ms, run);
    const concurrent = await timeFor(`kernel, ${concurrency} concurrent`, ms, run, concurrency);
    const overheadPerCall = (result) => (result.usPerItem - baseline.usPerItem) / 2;
    return { baseline, sequential, concurrent, overheadPerCall };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printKernelBench({ baseline, sequential, concurrent, overheadPerCall }) {
  console.log("kernel: scripted run, 3 model turns + 2 tool calls, in-memory state");
  for (const result of [baseline, sequential, concurrent]) {
    const ratio = result === baseline ? "baseline" : `${(baseline.perSecond / result.perSecond).toFixed(0)}x slower than baseline, ${overheadPerCall(result).toFixed(1)} µs kernel overhead per tool call`;
    console.log(`  ${result.label.padEnd(28)} ${result.perSecond.toFixed(0).padStart(8)} runs/s  ${result.usPerItem.toFixed(1).padStart(8)} µs/run  (${ratio})`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printKernelBench(await runKernelBench());
