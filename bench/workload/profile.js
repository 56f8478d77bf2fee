// Profile one system on the workload: node --cpu-prof --cpu-prof-dir=DIR bench/workload/profile.js memory 3
import { SYSTEMS } from "./systems.js";

const [system = "memory", seconds = "3", concurrency = "1"] = process.argv.slice(2);
const opened = await SYSTEMS[system].open();
const until = Date.now() + Number(seconds) * 1000;
let runs = 0;
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (Date.now() < until) {
      await opened.runOnce();
      runs += 1;
    }
  }),
);
await opened.close();
console.log(`${system}: ${runs} runs in ${seconds}s at ${concurrency} concurrent`);
