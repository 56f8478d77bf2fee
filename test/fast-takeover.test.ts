import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { createPostgresState } from "@assemblyline-agents/postgres";
import { OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, type RuntimeBundle } from "@assemblyline-agents/runtime";
import type { RunStore, StateAdapter } from "@assemblyline-agents/core";
import { TEST_DATABASE_URL, probeDatabase } from "../plugins/postgres/test/support/database.js";

const database = await probeDatabase("fast-takeover");
const child = resolve(import.meta.dirname, "fixtures/zombie-child.mjs");
const work = mkdtempSync(join(tmpdir(), "al-takeover-"));
const schema = `al_takeover_${process.pid}_${Date.now().toString(36)}`;
const agentDir = join(work, "agent");
/** Far longer than the test: a takeover can only come from proof that the holder is gone. */
const LEASE_MS = 120_000;
let artifactRoot = "";
let bundle: RuntimeBundle;
const children: ChildProcess[] = [];

beforeAll(async () => {
  cpSync(resolve(import.meta.dirname, "fixtures/zombie-agent"), agentDir, { recursive: true });
  artifactRoot = (await buildAgent(agentDir)).artifactRoot;
  bundle = await loadRuntimeBundle(artifactRoot);
});
afterEach(() => {
  for (const process of children.splice(0)) {
    if (process.exitCode === null && process.signalCode === null) {
      process.kill("SIGCONT");
      process.kill("SIGKILL");
    }
  }
});
afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  if (!database.available) return;
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

/** Start a holder that takes the run and hangs mid-tool-call with a 120 s lease; resolves once it is there. */
async function startHolder(connection: string, where: string, name: string): Promise<ChildProcess> {
  const marker = join(work, `mid-call-${name}`);
  const holder = spawn(process.execPath, [child, artifactRoot, connection, where, "start", join(agentDir, "script.json")], {
    env: { ...process.env, ZOMBIE_LEDGER: join(work, `ledger-${name}`), ZOMBIE_MARKER: marker, REPLICA_NAME: name, ZOMBIE_WORK_MS: "600000", REPLICA_LEASE_MS: String(LEASE_MS) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(holder);
  let stderr = "";
  holder.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const started = Date.now();
  while (!existsSync(marker)) {
    if (Date.now() - started > 60_000 || holder.exitCode !== null) throw new Error(`holder ${name} never reached the tool call:\n${stderr}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 20));
  }
  return holder;
}

async function kill(holder: ChildProcess): Promise<void> {
  const exited = new Promise((resolveExit) => holder.once("exit", resolveExit));
  holder.kill("SIGKILL");
  await exited;
}

async function onlyRun(runs: RunStore): Promise<string> {
  const [run] = (await runs.listRuns({ limit: 1 })).runs;
  return run!.id;
}

/** The fixture tool reads its ledger and work time from the environment: set for this process's replica, restored after each test. */
const savedEnv = { ...process.env };
afterEach(() => {
  for (const key of ["ZOMBIE_LEDGER", "ZOMBIE_MARKER", "ZOMBIE_WORK_MS", "REPLICA_NAME"]) {
    if (savedEnv[key] === undefined) delete process.env[key];
    else process.env[key] = savedEnv[key];
  }
});

function runtimeOn(state: StateAdapter, ownerId: string): OpenEveRuntime {
  Object.assign(process.env, { ZOMBIE_LEDGER: join(work, `ledger-${ownerId}`), ZOMBIE_MARKER: join(work, `mid-call-${ownerId}`), ZOMBIE_WORK_MS: "0", REPLICA_NAME: ownerId });
  return new OpenEveRuntime({ ...bundle, state, logger: noopLogger(), ownerId, leaseTtlMs: LEASE_MS });
}

describe("fast takeover from a dead owner, on file state", () => {
  it("resumes at once a run whose process was SIGKILLed, though its lease has two minutes left", async () => {
    const stateDir = join(work, "file-state");
    const holder = await startHolder("file", stateDir, "file-a");
    await kill(holder);
    const state = await FileStateAdapter.open({ directory: stateDir });
    try {
      const runId = await onlyRun(state);
      const before = await state.getRun(runId);
      expect(Date.parse(before!.lease!.expiresAt)).toBeGreaterThan(Date.now() + 30_000);
      const runtime = runtimeOn(state, "file-b");
      const resumed = await runtime.resume(runId);
      expect(resumed.status).toBe("completed");
      // The dead holder never got to its effect; the new owner applied it once.
      expect(existsSync(join(work, "ledger-file-a"))).toBe(false);
      expect(readFileSync(join(work, "ledger-file-b"), "utf8").trim().split("\n")).toHaveLength(1);
      await runtime.onIdle();
    } finally {
      await state.close();
    }
  }, 120_000);
});

describe.skipIf(!database.available)("fast takeover from a dead owner, on PostgreSQL", () => {
  it("never preempts a live owner, even a frozen one, and takes the run at once when its session is gone", async () => {
    const holder = await startHolder(TEST_DATABASE_URL, schema, "pg-a");
    const state = await createPostgresState({ connectionString: TEST_DATABASE_URL, schema });
    try {
      const runId = await onlyRun(state);
      const runtime = runtimeOn(state, "pg-b");
      // Alive (even stopped): its session holds its liveness lock, so the lease stands.
      holder.kill("SIGSTOP");
      await expect(runtime.resume(runId)).rejects.toMatchObject({ code: "AL_ERR_RUN_NOT_RESUMABLE" });
      expect(await runtime.recoverRuns()).toEqual([]);
      holder.kill("SIGCONT");

      await kill(holder);
      // PostgreSQL notices the closed socket and ends the session, which frees the lock.
      let resumed: Awaited<ReturnType<OpenEveRuntime["resume"]>> | undefined;
      for (let attempt = 0; attempt < 100 && !resumed; attempt += 1) {
        resumed = await runtime.resume(runId).catch((error: { code?: string }) => {
          if (error.code !== "AL_ERR_RUN_NOT_RESUMABLE") throw error;
          return undefined;
        });
        if (!resumed) await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      }
      expect(resumed?.status).toBe("completed");
      const events = await state.listEvents(runId);
      expect(events.filter((event) => event.type === "run.completed")).toHaveLength(1);
      await runtime.onIdle();
    } finally {
      await state.close();
    }
  }, 120_000);
});
