// `npm run bench`: every benchmark, each printed beside a baseline measured in the same run.
import { printKernelBench, runKernelBench } from "./kernel-bench.js";

printKernelBench(await runKernelBench());
