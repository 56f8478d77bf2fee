// Scenarios 2 and 3: three replicas of the Node host on one PostgreSQL (a private
// cluster), fed a stream of runs over HTTP, while the suite SIGKILLs one replica,
// SIGSTOPs another past its lease and SIGCONTs it after the others finished its
// runs (scenario 2), or restarts PostgreSQL under them (scenario 3). Clients retry
// a refused or hung request on the next replica with the same Idempotency-Key.
import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync } from "node:fs";
import { join } from "node:path";
import { createPostgresState } from "@assemblyline-agents/postgres";
import { audit } from "../lib/ledger.mjs";
import { sleep, track, waitFor } from "../lib/processes.mjs";

const REPLICA = new URL("../replica.mjs", import.meta.url).pathname;

function startReplica(name, { work, artifactRoot, url, schema, script, ledger }) {
  const child = track(
    spawn(process.execPath, [REPLICA, artifactRoot, url, schema, script], {
      env: { ...process.env, CHAOS_LEDGER: ledger, CHAOS_WHO: name, CHAOS_TOOL_MS: "800", ASSEMBLY_LINE_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  child.stderr.pipe(createWriteStream(join(work, `replica-${name}.log`)));
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`replica ${name} did not start in 60 s (see ${work}/replica-${name}.log)`)), 60_000);
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const match = /READY (\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve({ name, child, url: match[1], dead: false });
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`replica ${name} exited (${code ?? signal}) before it was ready (see ${work}/replica-${name}.log)`));
    });
  });
}

/** Submit one run, trying replicas in turn (same Idempotency-Key) until one acknowledges it. */
async function submit(replicas, index, figures) {
  const key = `chaos-${index}`;
  for (let attempt = 0; attempt < 60; attempt++) {
    const live = replicas.filter((replica) => !replica.dead);
    const replica = live[(index + attempt) % live.length];
    try {
      const response = await fetch(`${replica.url}/message`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ message: `job ${index}`, conversationId: `conversation-${index}` }),
        signal: AbortSignal.timeout(2_000),
      });
      const body = await response.json().catch(() => ({}));
      if ((response.status === 202 || response.status === 200) && body.runId) return body.runId;
      figures.refused += 1;
      await sleep(Math.min(2_000, Number(response.headers.get("retry-after") ?? "0.2") * 1_000));
    } catch {
      // Killed, frozen or restarting: the next replica gets the same event.
      figures.retried += 1;
      await sleep(100);
    }
  }
  throw new Error(`run ${index} was never acknowledged`);
}

async function readStore(url, schema) {
  const state = await createPostgresState({ connectionString: url, schema });
  try {
    const runs = new Map();
    let cursor;
    do {
      const page = await state.listRuns({ limit: 500, ...(cursor ? { cursor } : {}) });
      for (const run of page.runs) runs.set(run.id, { status: run.status, events: await state.listEvents(run.id) });
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return runs;
  } finally {
    await state.close();
  }
}

async function unfinished(url, schema, started) {
  const state = await createPostgresState({ connectionString: url, schema });
  try {
    let open = 0;
    for (const runId of started) if ((await state.getRun(runId))?.status !== "completed") open += 1;
    return open;
  } finally {
    await state.close();
  }
}

/**
 * Why the faults proved nothing, if they did not happen: each figure in `required` must be above 0, and
 * the store may hold no more runs than were submitted (an Idempotency-Key that made two runs).
 */
export function faultProblems(figures, required) {
  const problems = required.filter((name) => !(figures[name] > 0)).map((name) => `fault did not happen: ${name} is ${figures[name] ?? 0}`);
  if (figures.runsInStore > figures.runsSubmitted) problems.push(`the store holds ${figures.runsInStore} runs for ${figures.runsSubmitted} submitted: an Idempotency-Key started more than one`);
  return problems;
}

/**
 * @param {{ work: string, artifactRoot: string, script: string, postgres: { url: string, restart(mode?: string): Promise<unknown> },
 *   schema: string, runs: number, spacingMs: number, log(line: string): void, required: string[],
 *   faults: Array<{ atMs: number, after?: string, name: string,
 *     act(replicas, figures, control: { restart(index: number, name: string): Promise<void>, unfinished(runIds: string[]): Promise<number> }): unknown }> }} options
 *   A fault acts `atMs` after the load begins, or with `after`, `atMs` after the named fault has acted.
 *   `required` names figures the faults must have raised above 0 for the scenario to pass.
 */
export async function replicaLoad(options) {
  const { work, artifactRoot, script, postgres, schema, runs, spacingMs, faults, required, log } = options;
  mkdirSync(work, { recursive: true });
  const ledger = join(work, "ledger.log");
  const begun = Date.now();
  const start = (name) => startReplica(name, { work, artifactRoot, url: postgres.url, schema, script, ledger });
  const replicas = await Promise.all(["a", "b", "c"].map((name) => start(name)));
  // A fault may replace a replica by a new process under a new name (a restart).
  const control = {
    async restart(index, name) {
      replicas[index] = await start(name);
    },
    unfinished: (runIds) => unfinished(postgres.url, schema, runIds),
  };
  const figures = { replicas: replicas.length, runsSubmitted: runs, kills: 0, stops: 0, restarts: 0, replicaRestarts: 0, retried: 0, refused: 0 };
  const started = new Set();
  try {
    const loadBegun = Date.now();
    const acted = new Map();
    const pending = faults.map((fault) => {
      const acting = (async () => {
        // A fault timed from another waits for it to have acted, not for the clock: a wait inside it cannot reorder them.
        if (fault.after) {
          if (!acted.has(fault.after)) throw new Error(`fault "${fault.name}" is timed after "${fault.after}", which is not listed before it`);
          await acted.get(fault.after);
        }
        await sleep(fault.atMs);
        log(`  t=${((Date.now() - loadBegun) / 1000).toFixed(1)}s ${fault.name}`);
        await fault.act(replicas, figures, control);
        log(`  t=${((Date.now() - loadBegun) / 1000).toFixed(1)}s ${fault.name}: done`);
      })();
      acted.set(fault.name, acting);
      return acting;
    });
    const acknowledged = [];
    for (let index = 0; index < runs; index++) {
      acknowledged.push(submit(replicas, index, figures).then((runId) => started.add(runId)));
      await sleep(spacingMs);
    }
    await Promise.all([...acknowledged, ...pending]);
    log(`  t=${((Date.now() - loadBegun) / 1000).toFixed(1)}s all ${runs} runs acknowledged; waiting for them to finish`);
    const left = await waitFor(async () => {
      const open = await unfinished(postgres.url, schema, started).catch(() => -1);
      return open === 0 ? 0 : undefined;
    }, 90_000, 500);
    if (left === undefined) log("  gave up waiting after 90 s: counting what is unfinished as lost");
    // Let a woken replica do whatever it would still do before counting.
    await sleep(3_000);
    const store = await readStore(postgres.url, schema);
    figures.runsInStore = store.size;
    const result = audit(ledger, started, store);
    const unproven = faultProblems(figures, required);
    return { figures: { ...figures, ...result.figures, elapsedMs: Date.now() - begun }, problems: [...unproven, ...result.problems], failed: result.failed || unproven.length > 0 };
  } finally {
    for (const replica of replicas) {
      if (replica.child.exitCode !== null || replica.child.signalCode !== null) continue;
      replica.child.kill("SIGCONT");
      replica.child.kill("SIGTERM");
    }
    await Promise.all(replicas.map((replica) => (replica.child.exitCode !== null || replica.child.signalCode !== null ? undefined : new Promise((done) => replica.child.once("exit", done)))));
  }
}
