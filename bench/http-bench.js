// The Node host over HTTP: a scripted run (3 model turns, 2 tool calls) per request,
// POST /message?wait=10 answered with the reply, at 1, 16 and 50 concurrent
// clients, beside three baselines measured in the same run: a bare node:http
// handler (read the JSON body, answer JSON) with the same client; the agent's
// runtime on its own (benchRuntime: same bundle, script, state adapter, limits and deliveries owed,
// not tapped by a host) called directly (runtime.run() at the same concurrency); and
// that bare handler awaiting runtime.run() on it and answering its result. Both start
// the run the host starts for the message: the same channel and idempotency key (channelRun).
// What the host adds over the runtime is its rate against the last one: the same
// transport, client, state adapter, workload and wait (the reply once the run rests),
// so the difference is the host's own work (routing, auth, ingress, the durable
// mailbox, the run watcher observing the runtime's events, the outbox). The clients
// run in a worker thread, so they do not compete with the server for its event loop.
//
//   node bench/http-bench.js        (after `npx tsc -b plugins/node`)
//
// Each level runs on a host and state of its own (startComparedPaths). 127.0.0.1 only. Bounded: a warm-up (BENCH_HTTP_WARMUP, default 3 s per path), then per level (3) the bare
// handler and runtime.run() for BENCH_SECONDS (default 2 s) each and the two compared paths for 4 x BENCH_SECONDS
// each, in 8 alternating slices: about 90 s.
import { randomUUID } from "node:crypto";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { Agent, createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { listenNodeRuntime } from "@assemblyline-agents/node";

const LEVELS = [1, 16, 50];
const WARMUP_MS = 300;
/**
 * Turns each of the two compared paths takes per level, BENCH_SECONDS / 2 each. A 1 s slice here moves by
 * tens of points with the machine's load: with 4 the merged figure of one run still moved by 20 points.
 */
const SLICES = 8;

// defaultEnabled: the scripted model calls both tools by name, and an authored tool is otherwise deferred.
const TOOL = (name) => `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "${name}",
  inputSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"] },
  defaultEnabled: true,
  async execute(input) { return { ${name}: input.value.length }; },
});
`;

/** POST `body` to `url` and resolve with the status. */
function post(agent, url, body) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * `clients` loops, each on its own keep-alive connection, sending requests back to back:
 * for `warmUpMs` unmeasured, then for `ms`, timing each. The same connections carry both,
 * so the measured time holds no connection set-up: the first request on 50 new connections
 * took 100-480 ms here (against 5-30 ms later), a third of a 1 s slice.
 */
async function load(url, clients, ms, warmUpMs = 0) {
  const agents = Array.from({ length: clients }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
  const latencies = [];
  let failures = 0;
  let message = 0;
  const send = (agent) => post(agent, url, JSON.stringify({ message: `bench ${(message += 1)}` }));
  const warmUntil = performance.now() + warmUpMs;
  await Promise.all(
    agents.map(async (agent) => {
      while (performance.now() < warmUntil) await send(agent);
    }),
  );
  const until = performance.now() + ms;
  const started = performance.now();
  await Promise.all(
    agents.map(async (agent) => {
      while (performance.now() < until) {
        const sent = performance.now();
        const status = await send(agent);
        if (status >= 200 && status < 300) latencies.push(performance.now() - sent);
        else failures += 1;
      }
    }),
  );
  const elapsed = performance.now() - started;
  for (const agent of agents) agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { requests: latencies.length, failures, perSecond: (latencies.length / elapsed) * 1000, p50: at(0.5), p99: at(0.99), elapsed, latencies };
}

/** One result from slices of the same load: requests over the summed time, percentiles over every latency. */
function merge(slices) {
  const latencies = slices.flatMap((slice) => slice.latencies).sort((a, b) => a - b);
  const elapsed = slices.reduce((sum, slice) => sum + slice.elapsed, 0);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { requests: latencies.length, failures: slices.reduce((sum, slice) => sum + slice.failures, 0), perSecond: (latencies.length / elapsed) * 1000, p50: at(0.5), p99: at(0.99) };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * A full garbage collection, between timed slices. Both paths share this process's heap, and their
 * in-memory states keep every run (hundreds of MB by a level's end): a major collection's marking took
 * 8-190 ms of the main thread here, fell on whichever path was running, and moved one 1 s slice by
 * up to a fifth. Collected before each slice, none falls inside one.
 */
export function collectGarbage() {
  if (!globalThis.gc) setFlagsFromString("--expose-gc");
  (globalThis.gc ?? runInNewContext("gc"))();
}

/** Run `load` in a worker thread and resolve with its result. */
export function loadFromWorker(url, clients, ms, warmUpMs = 0) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { url, clients, ms, warmUpMs } });
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}

/** The host's run (channelRun) started by calling `runtime` directly, `clients` at a time, for `ms`. */
async function direct(runtime, clients, ms) {
  let runs = 0;
  const until = performance.now() + ms;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const result = await runtime.run(channelRun(`bench ${runs}`));
        if (result.status !== "completed") throw new Error(`direct run ended ${result.status}`);
        runs += 1;
      }
    }),
  );
  return { requests: runs, failures: 0, perSecond: (runs / (performance.now() - started)) * 1000 };
}

/**
 * The run the host starts for `message` on the bench's raw `message` channel (channel-ingress.ts, no
 * conversation, no Idempotency-Key): its channel, event id and idempotency key. The run carries them to
 * its model context (the channel part) and its stored input: the baseline runs the host's run, not a
 * smaller one (1.01x the rate of `{ message }` alone for `runtime.run()` here, within the noise).
 */
export function channelRun(message) {
  const eventId = `message-${randomUUID()}`;
  return { message, metadata: {}, idempotencyKey: `message:${eventId}`, channel: { name: "message", metadata: { eventId } } };
}

/**
 * A bare node:http JSON handler. Without `runtime` it echoes; with it, it awaits
 * `runtime.run(channelRun(message))` and answers the RunResult: the runtime behind the
 * same transport and client as the host, running the same run, the baseline the host's
 * own work is measured against.
 */
export async function bareServer(runtime) {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", async () => {
      const { message } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const result = runtime ? await runtime.run(channelRun(message)) : { status: "completed", response: { text: `echo ${message.length}` } };
      const text = JSON.stringify(result);
      res.writeHead(result.status === "completed" ? 200 : 500, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/message`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** The bench agent (3 scripted turns, 2 tools, one raw HTTP channel), built; `remove()` deletes its folder. */
export async function buildBenchAgent() {
  const dir = mkdtempSync(join(tmpdir(), "al-http-bench-"));
  try {
    mkdirSync(join(dir, "tools"));
    mkdirSync(join(dir, "channels"));
    writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "bench/model" });\n`);
    writeFileSync(join(dir, "tools/first.ts"), TOOL("first"));
    writeFileSync(join(dir, "tools/second.ts"), TOOL("second"));
    writeFileSync(join(dir, "channels/message.ts"), `import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/message" });\n`);
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    return { bundle, remove: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * The bench agent served by the Node host on a fresh in-memory state. `agent` (from
 * buildBenchAgent) is built once and served by many hosts; without it, the host builds
 * its own and removes it on close.
 */
export async function startBenchHost(maxClients, agent) {
  const own = agent ? undefined : await buildBenchAgent();
  try {
    const handle = await listenNodeRuntime({
      ...(agent ?? own).bundle,
      state: new InMemoryStateAdapter(),
      agentHarness: benchScript(),
      port: 0,
      host: "127.0.0.1",
      devMode: true,
      logger: noopLogger(),
      env: {},
      maxConcurrentRuns: maxClients,
      maxQueuedRuns: maxClients,
    });
    return {
      handle,
      url: `${handle.url}/message?wait=10`,
      close: async () => {
        await handle.shutdown({ timeoutMs: 5_000 });
        own?.remove();
      },
    };
  } catch (error) {
    own?.remove();
    throw error;
  }
}

/** The bench's script: 3 model turns, the first two calling one tool each. */
function benchScript() {
  return scriptedHarness({
    turns: [{ toolCalls: [{ name: "first", input: { value: "alpha" } }] }, { toolCalls: [{ name: "second", input: { value: "beta" } }] }, { text: "done" }],
  });
}

/**
 * The bench agent's runtime on its own, as an application embeds it: the same bundle,
 * script, state adapter and limits as the host's, but not the host's runtime, whose
 * event hook the host taps (its run watcher and outbox): that observing is the host's
 * work, so the baseline must not carry it.
 */
export function benchRuntime(maxClients, agent) {
  const { channels } = agent.bundle.sourceBundle;
  return new OpenEveRuntime({
    ...agent.bundle,
    state: new InMemoryStateAdapter(),
    // As the host decides it (its server.ts): a channel without deliver() (the bench's raw `message` route)
    // owes no delivery row, since its reply is read from the run. The runtime's default owes one for any channel.
    owesDelivery: (name) => channels[name] === undefined || typeof channels[name].deliver === "function",
    agentHarness: benchScript(),
    logger: noopLogger(),
    env: {},
    maxConcurrentRuns: maxClients,
    maxQueuedRuns: maxClients,
  });
}

/**
 * A host, and the bare handler over a runtime of its own (benchRuntime), each on a
 * state of its own: each level starts on empty in-memory states, so its figures do
 * not carry the heap of every run earlier levels left in the store (hundreds of MB
 * by the last level, whose garbage collection taxes each path by how much it allocates).
 */
async function startComparedPaths(maxClients, agent) {
  const host = await startBenchHost(maxClients, agent);
  try {
    const runtime = benchRuntime(maxClients, agent);
    const wrapped = await bareServer(runtime);
    return {
      host,
      runtime,
      wrapped,
      close: async () => {
        await wrapped.close();
        await runtime.close?.();
        await host.close();
      },
    };
  } catch (error) {
    await host.close();
    throw error;
  }
}

export async function runHttpBench({ seconds = Number(process.env.BENCH_SECONDS ?? 2) } = {}) {
  const bare = await bareServer();
  const agent = await buildBenchAgent();
  let paths;
  try {
    // The JIT settles over seconds, not the 300 ms before each level: without this the
    // first paths measured run cold, and the comparison says more about order than cost.
    const warmUpMs = Number(process.env.BENCH_HTTP_WARMUP ?? 3) * 1000;
    paths = await startComparedPaths(Math.max(...LEVELS), agent);
    await loadFromWorker(bare.url, 16, warmUpMs / 3);
    await direct(paths.runtime, 16, warmUpMs);
    await loadFromWorker(paths.wrapped.url, 16, warmUpMs);
    await loadFromWorker(paths.host.url, 16, warmUpMs);
    const levels = [];
    for (const clients of LEVELS) {
      await paths.close();
      paths = undefined;
      paths = await startComparedPaths(Math.max(...LEVELS), agent);
      const { host, wrapped } = paths;
      const { latencies: _bare, ...baseline } = await loadFromWorker(bare.url, clients, seconds * 1000, WARMUP_MS);
      await direct(paths.runtime, clients, WARMUP_MS);
      const runtime = await direct(paths.runtime, clients, seconds * 1000);
      // The two paths the target compares take turns in short slices, so a change in the
      // machine's load (other processes) falls on both alike rather than on one.
      const overHttpSlices = [];
      const hostedSlices = [];
      // Which goes first alternates (ABBA): the path measured second can inherit the first one's garbage
      // (a major collection its allocations made due), and a fixed order would charge that to one side.
      const slice = (url) => {
        collectGarbage();
        return loadFromWorker(url, clients, (seconds * 1000) / 2, WARMUP_MS / 3);
      };
      for (let index = 0; index < SLICES; index += 1) {
        if (index % 2 === 0) {
          overHttpSlices.push(await slice(wrapped.url));
          hostedSlices.push(await slice(host.url));
        } else {
          hostedSlices.push(await slice(host.url));
          overHttpSlices.push(await slice(wrapped.url));
        }
      }
      const runtimeOverHttp = merge(overHttpSlices);
      const hosted = merge(hostedSlices);
      // Each slice of the host against the baseline's slice beside it (before or after): a load spike
      // on this shared machine moves one pair, where it moves the merged rate whole.
      const pairs = hostedSlices.map((slice, index) => overHttpSlices[index].perSecond / slice.perSecond - 1);
      levels.push({
        clients,
        baseline,
        runtime,
        runtimeOverHttp,
        hosted,
        hostOverhead: runtimeOverHttp.perSecond / hosted.perSecond - 1,
        hostOverheadBySlice: pairs,
        hostOverheadMedianOfSlices: median(pairs),
        overDirectRuntime: runtime.perSecond / hosted.perSecond - 1,
      });
    }
    return { seconds, levels };
  } finally {
    await paths?.close();
    agent.remove();
    await bare.close();
  }
}

export function printHttpBench({ levels }) {
  console.log("http: POST /message?wait=10 -> scripted run (3 model turns + 2 tool calls, in-memory state) -> reply; baselines: bare node:http JSON handler, and runtime.run() behind it");
  const line = (label, result) =>
    `${label.padEnd(22)} ${result.perSecond.toFixed(0).padStart(7)} req/s  p50 ${result.p50.toFixed(2).padStart(7)} ms  p99 ${result.p99.toFixed(2).padStart(7)} ms${result.failures ? `  (${result.failures} non-2xx)` : ""}`;
  for (const { clients, baseline, runtime, runtimeOverHttp, hosted, hostOverhead, hostOverheadBySlice, hostOverheadMedianOfSlices, overDirectRuntime } of levels) {
    console.log(`  ${String(clients).padStart(2)} client${clients === 1 ? " " : "s"}: ${line("bare node:http", baseline)}`);
    console.log(`              ${"runtime.run()".padEnd(22)} ${runtime.perSecond.toFixed(0).padStart(7)} runs/s (no HTTP)`);
    console.log(`              ${line("runtime.run() over http", runtimeOverHttp)}`);
    console.log(
      `              ${line("assembly-line host", hosted)}  (host adds ${(hostOverhead * 100).toFixed(0)}% over runtime.run() behind node:http; ${(overDirectRuntime * 100).toFixed(0)}% over runtime.run() without HTTP)`,
    );
    const percents = hostOverheadBySlice.map((ratio) => `${(ratio * 100).toFixed(0)}%`).join(" / ");
    console.log(`              ${"".padEnd(22)} slice by slice: ${percents} (median ${(hostOverheadMedianOfSlices * 100).toFixed(0)}%)`);
  }
}

if (!isMainThread && workerData?.url) parentPort.postMessage(await load(workerData.url, workerData.clients, workerData.ms, workerData.warmUpMs));
else if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) printHttpBench(await runHttpBench());
