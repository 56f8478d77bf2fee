// Build an agent folder in a process of its own and print its artifact root: the
// processes that run the agent load the built artifact, as a deployed host does,
// without the compiler in their memory.
import { buildAgent } from "@assemblyline-agents/runtime";

const [dir] = process.argv.slice(2);
if (!dir) throw new Error("usage: node bench/workload/build-agent.js <agent folder>");
process.stdout.write(`${(await buildAgent(dir)).artifactRoot}\n`);
