import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunRecord } from "@assemblyline-agents/core";
import { createPostgresState, type PostgresStateAdapter } from "@assemblyline-agents/postgres";
import { buildAgent } from "@assemblyline-agents/runtime";
import { TEST_DATABASE_URL, probeDatabase, randomSchema } from "../plugins/postgres/test/support/database.js";

const database = await probeDatabase("automations-postgres-replicas");
const replicaScript = resolve(import.meta.dirname, "fixtures/automation-replica.mjs");
const work = mkdtempSync(join(tmpdir(), "al-automations-"));
const agentDir = join(work, "agent");
const schema = randomSchema("al_automations");
const children = new Set<ChildProcess>();
let artifactRoot = "";
let state: PostgresStateAdapter | undefined;

beforeAll(async () => {
  cpSync(resolve(import.meta.dirname, "fixtures/automation-agent"), agentDir, { recursive: true });
  artifactRoot = (await buildAgent(agentDir)).artifactRoot;
});
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await state?.close();
  rmSync(work, { recursive: true, force: true });
  if (!database.available) return;
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

/** A replica process; `holding` resolves once it stalls mid-dispatch (with STALL_AFTER_MS). */
function startReplica(name: string, env: Record<string, string> = {}): Promise<ChildProcess & { holding: Promise<void> }> {
  const child = spawn(process.execPath, [replicaScript, artifactRoot, TEST_DATABASE_URL, schema, join(agentDir, "script.json"), name], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  children.add(child);
  child.on("exit", () => children.delete(child));
  let out = "";
  let held!: () => void;
  const holding = new Promise<void>((resolveHolding) => (held = resolveHolding));
  return new Promise((resolveReady, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("holding ")) held();
      if (out.includes("ready ")) resolveReady(Object.assign(child, { holding }));
    });
    child.on("exit", (code) => reject(new Error(`replica ${name} exited (${code}) before it was ready`)));
  });
}

async function automationRuns(): Promise<Array<{ run: RunRecord; dueAt: string }>> {
  const all: RunRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await state!.listRuns({ agentId: "automation-agent", limit: 200, ...(cursor ? { cursor } : {}) });
    all.push(...page.runs);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return all.map((run) => ({ run, dueAt: String((run.input.metadata.automation as { dueAt?: string } | undefined)?.dueAt) }));
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 40_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
}

const SECOND = 1_000;

describe.skipIf(!database.available)("a cron automation on two replicas sharing PostgreSQL", () => {
  it("starts exactly one run per due time for 10 seconds, none lost when a replica is SIGKILLed mid-way", async () => {
    state = await createPostgresState({ connectionString: TEST_DATABASE_URL, schema });
    // a stalls after ~4 s with a due time dispatched and its schedule lease held; it is killed there.
    const [a, b] = await Promise.all([startReplica("a", { STALL_AFTER_MS: "4000" }), startReplica("b")]);

    const first = await waitFor("the first automation run", async () => {
      const runs = await automationRuns();
      return runs.length > 0 ? Math.min(...runs.map((entry) => Date.parse(entry.dueAt))) : undefined;
    });
    const dueBy = (offset: number) => async () => ((await automationRuns()).some((entry) => Date.parse(entry.dueAt) >= first + offset) ? true : undefined);

    await a.holding;
    const killed = new Promise((resolveExit) => a.once("exit", resolveExit));
    a.kill("SIGKILL");
    await killed;

    const cutoff = first + 10 * SECOND;
    await waitFor("10 seconds of due times", dueBy(10 * SECOND));
    // The survivor adopts what the dead replica accepted; every run of the window finishes.
    const window = await waitFor("every run of the window to complete", async () => {
      const runs = (await automationRuns()).filter((entry) => Date.parse(entry.dueAt) <= cutoff);
      return runs.every((entry) => entry.run.status === "completed") ? runs : undefined;
    });
    const stopped = new Promise((resolveExit) => b.once("exit", resolveExit));
    b.kill("SIGTERM");
    await stopped;

    const expected = Array.from({ length: 11 }, (_, index) => new Date(first + index * SECOND).toISOString());
    const dueTimes = window.map((entry) => entry.dueAt).sort();
    expect(dueTimes).toEqual(expected);
    expect(new Set(window.map((entry) => entry.run.id)).size).toBe(11);
    for (const { run } of window) {
      expect(run.input.message).toBe("tick");
      expect(run.output).toEqual({ text: "tock" });
    }
  }, 120_000);
});
