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
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { Agent, request } from "node:http";
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
if (!isMainThread) {
  const { url, clients, ms } = workerData;
  const post = (agent, body) => new Promise((resolve, reject) => { const req = request(url, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => { res.resume(); res.on("end", () => resolve(res.statusCode)); }); req.on("error", reject); req.end(body); });
  const agents = Array.from({ length: clients }, () => new Agent({ keepAlive: true, maxSockets: 1 })); let n = 0, m = 0;
  const until = performance.now() + ms; const t0 = performance.now();
  await Promise.all(agents.map(async (a) => { while (performance.now() < until) { await post(a, JSON.stringify({ message: `b ${m++}` })); n++; } }));
  parentPort.postMessage({ n, el: performance.now() - t0 }); for (const a of agents) a.destroy();
} else {
  /** The main thread's sampled time that is not idle, in µs: what the event loop spent on the path. */
  const mainThreadBusyUs = (profile) => {
    const idle = new Set(profile.nodes.filter((node) => node.callFrame.functionName === "(idle)").map((node) => node.id));
    let busy = 0;
    for (let i = 0; i < profile.samples.length; i++) if (!idle.has(profile.samples[i])) busy += profile.timeDeltas[i] ?? 0;
    return busy;
  };
  const { Session } = await import("node:inspector/promises");
  const { bareServer, benchRuntime, buildBenchAgent, startBenchHost } = await import("./http-bench.js");
  const [rounds = "4", ms = "3000", clients = "50", out = "/tmp/http-paths"] = process.argv.slice(2);
  const agent = await buildBenchAgent();
  const host = await startBenchHost(50, agent);
  const rt = benchRuntime(50, agent); const wrapped = await bareServer(rt);
  const load = (url, ms) => new Promise((res, rej) => { const w = new Worker(new URL(import.meta.url), { workerData: { url, clients: Number(clients), ms } }); w.once("message", res); w.once("error", rej); });
  await load(host.url, 3000); await load(wrapped.url, 3000);
  const s = new Session(); s.connect(); await s.post("Profiler.enable");
  const tot = { host: [0, 0, 0, 0], wrapped: [0, 0, 0, 0] };
  for (let r = 0; r < Number(rounds); r++) for (const [name, url] of r % 2 ? [["wrapped", wrapped.url], ["host", host.url]] : [["host", host.url], ["wrapped", wrapped.url]]) {
    await load(url, 200);
    await s.post("Profiler.start"); const cpu = process.cpuUsage();
    const { n, el } = await load(url, Number(ms));
    const u = process.cpuUsage(cpu); const { profile } = await s.post("Profiler.stop");
    writeFileSync(`${out}-${name}-${r}.cpuprofile`, JSON.stringify(profile));
    const busy = mainThreadBusyUs(profile);
    tot[name][0] += n; tot[name][1] += el; tot[name][2] += u.user + u.system; tot[name][3] += busy;
    console.log(name, r, n, (n / el * 1000).toFixed(0), "req/s", ((u.user + u.system) / n).toFixed(1), "µs CPU/req,", (busy / n).toFixed(1), "µs main thread busy/req");
  }
  for (const [k, [n, el, c, busy]] of Object.entries(tot)) console.log(k, (n / el * 1000).toFixed(0), "req/s,", (c / n).toFixed(1), "µs CPU/req,", (busy / n).toFixed(1), "µs main thread busy/req");
  console.log(`host over the baseline: main thread busy ${((tot.host[3] / tot.host[0] / (tot.wrapped[3] / tot.wrapped[0]) - 1) * 100).toFixed(0)}% per request, requests/s ${((tot.wrapped[0] / tot.wrapped[1] / (tot.host[0] / tot.host[1]) - 1) * 100).toFixed(0)}%`);
  await wrapped.close(); await rt.close?.(); await host.close(); agent.remove();
}
