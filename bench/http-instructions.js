// The HTTP host's own work counted in instructions, not seconds: the host and `runtime.run()` behind a
// bare node:http handler (the HTTP bench's startBenchHost, benchRuntime and bareServer) are each served
// in a process of their own under valgrind's callgrind, loaded by clients in this process (not counted),
// and the instructions the serving process executed while answering are divided by the requests it
// answered. Seconds on a shared 2-core machine move with its load by tens of points between runs of the
// HTTP bench; an instruction count does not, so a change to the host's code shows here at its size.
// It leaves out what instructions do not show: cache misses, system calls and the wake-ups between
// threads, which the HTTP bench's requests per second include.
//
//   node bench/http-instructions.js [clients] [warm-up seconds] [measured seconds] [rounds]
//
// Defaults: 16 clients, 20 s of warm-up (the JIT settles; nothing is counted), 30 s counted. Under
// callgrind a process runs 30-50 times slower and its threads one at a time: the garbage collector's
// helper threads then do work the main thread would share natively, so the figure that counts is the
// main thread's (the event loop, the bound at 16 and 50 clients); all threads are printed beside it.
// Rounds (default 2) alternate which path goes first. Needs valgrind (Debian's package); about 5 minutes.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { bareServer, benchRuntime, buildBenchAgent, loadFromWorker, startBenchHost } from "./http-bench.js";

/** How long each serving process is counted with no load, for the work it does per second (see perRequest). */
const IDLE_MS = 5000;
const PATHS = { host: "assembly-line host", wrapped: "runtime.run() over http" };

/** In the process under callgrind: serve one path, print its URL, and stop once stdin closes. */
async function serve(path, clients) {
  const agent = await buildBenchAgent();
  const server = path === "host" ? await startBenchHost(clients, agent) : await bareServer(benchRuntime(clients, agent));
  try {
    console.log(JSON.stringify({ url: server.url }));
    process.stdin.resume();
    await once(process.stdin, "end");
  } finally {
    await server.close();
    agent.remove();
  }
}

/**
 * callgrind's totals per thread of one process, from its output files (one per thread with
 * --separate-threads): `callgrind.out.<dump>-<thread>` for a dump asked for by name, `callgrind.out-<thread>`
 * for what was counted after the last one.
 */
function threadTotals(dir, dump) {
  const totals = new Map();
  const pattern = dump === undefined ? /^callgrind\.out-\d+$/ : new RegExp(`^callgrind\\.out\\.${dump}-\\d+$`);
  for (const name of readdirSync(dir).filter((file) => pattern.test(file))) {
    const text = readFileSync(join(dir, name), "utf8");
    const thread = Number(/^thread: (\d+)$/m.exec(text)?.[1]);
    const total = Number((/^totals: (\d+)/m.exec(text) ?? /^summary: (\d+)/m.exec(text))?.[1]);
    if (Number.isInteger(thread) && Number.isFinite(total)) totals.set(thread, total);
  }
  return totals;
}

/** Serve `path` under callgrind, load it, and count the instructions of the measured stretch only. */
async function measure(path, clients, warmUpMs, measuredMs) {
  const dir = mkdtempSync(join(tmpdir(), "al-http-instructions-"));
  const child = spawn(
    "valgrind",
    ["--tool=callgrind", "--smc-check=all-non-file", "--instr-atstart=no", "--separate-threads=yes", `--callgrind-out-file=${join(dir, "callgrind.out")}`, process.execPath, fileURLToPath(import.meta.url), "--serve", path, String(clients)],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = once(child, "exit");
  try {
    const lines = createInterface({ input: child.stdout });
    const [first] = await Promise.race([once(lines, "line"), exited.then(([code]) => Promise.reject(new Error(`the ${path} process under valgrind exited (${code}) before serving:\n${stderr.slice(-2000)}`)))]);
    const { url } = JSON.parse(first);
    await loadFromWorker(url, clients, warmUpMs);
    execFileSync("callgrind_control", ["--instr=on", String(child.pid)], { stdio: "ignore" });
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    execFileSync("callgrind_control", ["--dump=idle", String(child.pid)], { stdio: "ignore" });
    const load = await loadFromWorker(url, clients, measuredMs);
    execFileSync("callgrind_control", ["--instr=off", String(child.pid)], { stdio: "ignore" });
    child.stdin.end();
    const [code] = await exited;
    if (code !== 0) throw new Error(`the ${path} process under valgrind exited with ${code}:\n${stderr.slice(-2000)}`);
    const idle = threadTotals(dir, 1);
    const loaded = threadTotals(dir);
    if (!loaded.has(1) || !idle.has(1)) throw new Error(`callgrind wrote no totals for the ${path} process's main thread in ${dir}`);
    const sum = (totals) => [...totals.values()].reduce((total, value) => total + value, 0);
    // Work on timers (the host's recovery sweep, its outbox's poll) comes per second, not per request; under
    // callgrind a request takes 30-50 times as long, so that work is counted at its idle rate and taken out.
    const counted = (loadedCount, idleCount) => loadedCount - (idleCount / IDLE_MS) * load.elapsed;
    return {
      requests: load.requests,
      failures: load.failures,
      main: counted(loaded.get(1), idle.get(1)),
      all: counted(sum(loaded), sum(idle)),
    };
  } finally {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const [clients = 16, warmUpSeconds = 20, measuredSeconds = 30, rounds = 2] = process.argv.slice(2, 6).map(Number);
  try {
    execFileSync("valgrind", ["--version"], { stdio: "ignore" });
  } catch {
    console.error("valgrind is not installed: apt-get install valgrind (it provides callgrind and callgrind_control)");
    process.exit(1);
  }
  console.log(`http instructions: POST /message?wait=10 at ${clients} clients, under callgrind (${warmUpSeconds} s warm-up, ${measuredSeconds} s counted per path, ${rounds} rounds)`);
  const totals = Object.fromEntries(Object.keys(PATHS).map((path) => [path, { requests: 0, failures: 0, main: 0, all: 0 }]));
  const perRequest = (total, key) => total[key] / total.requests;
  for (let round = 0; round < rounds; round += 1) {
    // Which path goes first alternates, as in the HTTP bench.
    for (const path of round % 2 === 0 ? ["host", "wrapped"] : ["wrapped", "host"]) {
      const result = await measure(path, clients, warmUpSeconds * 1000, measuredSeconds * 1000);
      for (const key of ["requests", "failures", "main", "all"]) totals[path][key] += result[key];
      const failed = result.failures ? ` (${result.failures} non-2xx)` : "";
      console.log(`  ${PATHS[path].padEnd(26)} round ${round}: ${String(result.requests).padStart(5)} requests  ${Math.round(perRequest(result, "main")).toLocaleString("en-US").padStart(10)} instructions per request on the main thread, ${Math.round(perRequest(result, "all")).toLocaleString("en-US").padStart(10)} on all threads${failed}`);
    }
  }
  const over = (key) => `${((perRequest(totals.host, key) / perRequest(totals.wrapped, key) - 1) * 100).toFixed(1)}%`;
  console.log(`  host over runtime.run() behind node:http, all rounds: ${over("main")} on the main thread, ${over("all")} on all threads`);
}

// The serving process exits once it has closed, whatever timers its runtime left behind.
if (process.argv[2] === "--serve") await serve(process.argv[3], Number(process.argv[4])).then(() => process.exit(0));
else await main();
