// `npm run bench`: every benchmark, each printed beside a baseline measured in the same run.
import { printHttpBench, runHttpBench } from "./http-bench.js";
import { printKernelBench, runKernelBench } from "./kernel-bench.js";

printKernelBench(await runKernelBench());
console.log("");
printHttpBench(await runHttpBench());
console.log("");

const { runPostgresBench } = await import("../plugins/postgres/bench/postgres-bench.js");
try {
  await runPostgresBench();
} catch (error) {
  console.log(`postgres: skipped (${error instanceof Error ? error.message.split("\n")[0] : String(error)})`);
}
