// The host and `runtime.run()` behind a bare node:http handler in one process, as the HTTP bench has
// them (its startBenchHost, benchRuntime and bareServer; clients in a worker thread), each loaded in
// turn and profiled on its own, so the two profiles share the JIT's state and differ by the path:
//
//   node bench/http-paths-profile.js [rounds] [ms] [clients] [prefix]
//
// Prints, for each path, requests/s, the process's CPU per request and the main thread's busy time per
// request (the profile's samples that are not idle: the figure the bench's ratio tends to at 50 clients,
// where the server's event loop is the bound), then the host's excess on each; and writes
// <prefix>-<host|wrapped>-<round>.cpuprofile (main thread) for each turn. Default prefix /tmp/http-paths.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { bareServer, benchRuntime, buildBenchAgent, loadFromWorker, startBenchHost } from "./http-bench.js";

/** The main thread's sampled time that is not idle, in µs: what the event loop spent on the path. */
function mainThreadBusyUs(profile) {
  const idle = new Set(profile.nodes.filter((node) => node.callFrame.functionName === "(idle)").map((node) => node.id));
  let busy = 0;
  for (let index = 0; index < profile.samples.length; index += 1) if (!idle.has(profile.samples[index])) busy += profile.timeDeltas[index] ?? 0;
  return busy;
}

async function main() {
  const [rounds = 4, ms = 3000, clients = 50] = process.argv.slice(2, 5).map(Number);
  const prefix = process.argv[5] ?? "/tmp/http-paths";
  const agent = await buildBenchAgent();
  const host = await startBenchHost(clients, agent);
  const runtime = benchRuntime(clients, agent);
  const wrapped = await bareServer(runtime);
  const paths = { host: host.url, wrapped: wrapped.url };
  try {
    // The JIT settles over seconds: both paths warm before anything is measured.
    for (const url of Object.values(paths)) await loadFromWorker(url, clients, 3000);
    const session = new Session();
    session.connect();
    await session.post("Profiler.enable");
    const totals = Object.fromEntries(Object.keys(paths).map((name) => [name, { answered: 0, failed: 0, elapsedMs: 0, cpuUs: 0, busyUs: 0 }]));
    for (let round = 0; round < rounds; round += 1) {
      // Which path goes first alternates, so a change in the machine's load falls on both alike.
      const order = round % 2 === 0 ? ["host", "wrapped"] : ["wrapped", "host"];
      for (const name of order) {
        await loadFromWorker(paths[name], clients, 200);
        await session.post("Profiler.start");
        const cpu = process.cpuUsage();
        const { requests: answered, failures: failed, elapsed: elapsedMs } = await loadFromWorker(paths[name], clients, ms);
        const used = process.cpuUsage(cpu);
        const { profile } = await session.post("Profiler.stop");
        writeFileSync(`${prefix}-${name}-${round}.cpuprofile`, JSON.stringify(profile));
        const total = totals[name];
        const cpuUs = used.user + used.system;
        const busyUs = mainThreadBusyUs(profile);
        Object.assign(total, { answered: total.answered + answered, failed: total.failed + failed, elapsedMs: total.elapsedMs + elapsedMs, cpuUs: total.cpuUs + cpuUs, busyUs: total.busyUs + busyUs });
        console.log(`${name.padEnd(7)} round ${round}: ${((answered / elapsedMs) * 1000).toFixed(0)} req/s, ${(cpuUs / answered).toFixed(1)} µs CPU and ${(busyUs / answered).toFixed(1)} µs main thread busy per request${failed ? ` (${failed} non-2xx)` : ""}`);
      }
    }
    session.disconnect();
    const perSecond = ({ answered, elapsedMs }) => (answered / elapsedMs) * 1000;
    const busyPerRequest = ({ answered, busyUs }) => busyUs / answered;
    for (const [name, total] of Object.entries(totals)) {
      console.log(`${name.padEnd(7)} all rounds: ${perSecond(total).toFixed(0)} req/s, ${(total.cpuUs / total.answered).toFixed(1)} µs CPU and ${busyPerRequest(total).toFixed(1)} µs main thread busy per request`);
    }
    const busyExcess = busyPerRequest(totals.host) / busyPerRequest(totals.wrapped) - 1;
    const rateExcess = perSecond(totals.wrapped) / perSecond(totals.host) - 1;
    console.log(`host over the baseline: main thread busy +${(busyExcess * 100).toFixed(0)}% per request, requests/s +${(rateExcess * 100).toFixed(0)}%`);
  } finally {
    await wrapped.close();
    await runtime.close?.();
    await host.close();
    agent.remove();
  }
}

await main();
