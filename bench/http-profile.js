// One level of the HTTP bench, for profiling the host:
//   node bench/http-profile.js [seconds] [clients] [mode] [warm-up seconds]
// With HTTP_PROFILE=file.cpuprofile, a CPU profile of the measured seconds only (not the warm-up).
// Modes: host (POST /message?wait=10 to the host), direct (runtime.run(), no HTTP),
// wrapped (runtime.run() behind a bare node:http handler), bare (a bare node:http echo).
// The clients run in this process, so the profile holds both sides; the warm-up
// (default 3 s) lets the JIT settle first, which changes the figures by 2-3x.
import { Agent, request } from "node:http";
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { performance } from "node:perf_hooks";
import { bareServer, benchRuntime, buildBenchAgent, channelRun, startBenchHost } from "./http-bench.js";

const seconds = Number(process.argv[2] ?? 4);
const clients = Number(process.argv[3] ?? 16);
const mode = process.argv[4] ?? "host";
const warmUp = Number(process.argv[5] ?? 3);
const agent = await buildBenchAgent();
const host = mode === "host" ? await startBenchHost(clients, agent) : undefined;
// The runtime on its own, as the bench compares the host with (not the host's runtime, which it taps).
const runtime = mode === "direct" || mode === "wrapped" ? benchRuntime(clients, agent) : undefined;
const server = mode === "wrapped" || mode === "bare" ? await bareServer(runtime) : undefined;
const url = server?.url ?? host?.url;

async function load(ms) {
  const until = performance.now() + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      while (performance.now() < until) {
        if (mode === "direct") await runtime.run(channelRun(`bench ${done}`));
        else {
          const body = JSON.stringify({ message: `bench ${done}` });
          await new Promise((resolve, reject) => {
            const req = request(url, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
              res.resume();
              res.on("end", resolve);
            });
            req.on("error", reject);
            req.end(body);
          });
        }
        done += 1;
      }
      agent.destroy();
    }),
  );
  return done;
}

try {
  await load(warmUp * 1000);
  const session = process.env.HTTP_PROFILE ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
  }
  const cpu = process.cpuUsage();
  const done = await load(seconds * 1000);
  const used = process.cpuUsage(cpu);
  if (session) {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(process.env.HTTP_PROFILE, JSON.stringify(profile));
    session.disconnect();
  }
  console.log(`${mode}: ${(done / seconds).toFixed(0)}/s at ${clients} clients, CPU ${((used.user + used.system) / 1e3 / done).toFixed(3)} ms per request`);
} finally {
  await server?.close();
  await runtime?.close();
  await host?.close();
  agent.remove();
}
