// Kernel overhead: a scripted run of 3 model turns and 2 tool calls, in memory,
// against a bare loop calling the same two tool functions (the baseline).
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";

const TOOL = (name) => `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "${name}",
  inputSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"] },
  async execute(input) { return { ${name}: input.value.length }; },
});
`;

async function timeIt(label, count, fn) {
  const started = performance.now();
  await fn();
  const ms = performance.now() - started;
  return { label, count, ms, perSecond: (count / ms) * 1000, usPerItem: (ms * 1000) / count };
}

export async function runKernelBench({ sequentialRuns = 400, concurrentRuns = 1000, concurrency = 50 } = {}) {
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
    const runtime = new OpenEveRuntime({ ...bundle, state: new InMemoryStateAdapter(), agentHarness: harness, logger: noopLogger(), maxConcurrentRuns: concurrency, maxQueuedRuns: concurrentRuns });
    const first = bundle.sourceBundle.tools.first;
    const second = bundle.sourceBundle.tools.second;

    for (let i = 0; i < 50; i++) await runtime.run({ message: "warm" });
    const baseline = await timeIt("bare loop (2 tool calls)", sequentialRuns, async () => {
      for (let i = 0; i < sequentialRuns; i++) {
        JSON.stringify(await first.execute({ value: "alpha" }, {}));
        JSON.stringify(await second.execute({ value: "beta" }, {}));
      }
    });
    const sequential = await timeIt("kernel, sequential", sequentialRuns, async () => {
      for (let i = 0; i < sequentialRuns; i++) await runtime.run({ message: "go" });
    });
    const concurrent = await timeIt(`kernel, ${concurrency} concurrent`, concurrentRuns, async () => {
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next++ < concurrentRuns) await runtime.run({ message: "go" });
        }),
      );
    });
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
