import { execFile, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresState } from "@assemblyline-agents/postgres";
import { OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { TEST_DATABASE_URL, probeDatabase } from "../plugins/postgres/test/support/database.js";

const DATABASE_URL = TEST_DATABASE_URL;
const database = await probeDatabase("postgres-replicas");
const child = resolve(import.meta.dirname, "fixtures/replica-child.mjs");
const work = mkdtempSync(join(tmpdir(), "al-replicas-"));
const schema = `al_replicas_${process.pid}_${Date.now().toString(36)}`;
const agentDir = join(work, "agent");
let artifactRoot = "";

beforeAll(async () => {
  cpSync(resolve(import.meta.dirname, "fixtures/replica-agent"), agentDir, { recursive: true });
  artifactRoot = (await buildAgent(agentDir)).artifactRoot;
});
afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  if (!database.available) return;
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

describe.skipIf(!database.available)("two replicas on one PostgreSQL", () => {
  it("resumes a run after its holder is SIGKILLed mid-tool-call, without re-running completed work", async () => {
    const log = join(work, "side-effects.log");
    const marker = join(work, "mid-call");
    const script = join(agentDir, "script.json");
    const env = (name: string, hang: boolean) => ({ ...process.env, REPLICA_LOG: log, REPLICA_MARKER: marker, REPLICA_NAME: name, REPLICA_HANG: hang ? "1" : "0" });

    const holder = spawn(process.execPath, [child, artifactRoot, DATABASE_URL, schema, "start", script], { env: env("a", true), stdio: "ignore" });
    const exited = new Promise((resolveExit) => holder.on("exit", resolveExit));
    const started = Date.now();
    while (!existsSync(marker)) {
      if (Date.now() - started > 30_000) throw new Error("replica a never reached the tool call");
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
    holder.kill("SIGKILL");
    await exited;

    const { stdout } = await promisify(execFile)(process.execPath, [child, artifactRoot, DATABASE_URL, schema, "recover", script], { env: env("b", false), timeout: 60_000 });
    const result = JSON.parse(stdout);
    expect(result.status).toBe("completed");
    expect(result.response.text).toBe("Charged and shipped.");

    const lines = readFileSync(log, "utf8").trim().split("\n");
    expect(lines.filter((line) => line.startsWith("charge"))).toHaveLength(1);
    const ships = lines.filter((line) => line.startsWith("ship"));
    // The interrupted call ran again on b, with the same idempotency key.
    expect(ships.map((line) => line.split(" ")[1])).toEqual(["a", "b"]);
    expect(new Set(ships.map((line) => line.split(" ")[2])).size).toBe(1);

    const state = await createPostgresState({ connectionString: DATABASE_URL, schema });
    try {
      const events = await state.listEvents(result.runId);
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
      expect(events.filter((event) => event.type === "tool.completed").map((event) => event.data.toolName)).toEqual(["charge_card", "ship_order"]);
      expect(events.some((event) => event.type === "run.resumed" && event.data.recovered === true && event.data.owner === "replica-b")).toBe(true);
      expect(events.filter((event) => event.type === "durable_step.completed" && event.data.key === "charge")).toHaveLength(1);
    } finally {
      await state.close();
    }
  }, 120_000);

  it("starts one run when the same provider event reaches both replicas", async () => {
    const bundle = await loadRuntimeBundle(artifactRoot);
    const harness = scriptedHarness({ turns: [{ text: "hello" }] });
    const [stateA, stateB] = await Promise.all([
      createPostgresState({ connectionString: DATABASE_URL, schema }),
      createPostgresState({ connectionString: DATABASE_URL, schema }),
    ]);
    try {
      const replicas = [stateA, stateB].map((state, index) => new OpenEveRuntime({ ...bundle, state, agentHarness: harness, logger: noopLogger(), ownerId: `dup-${index}` }));
      const results = await Promise.all(replicas.map((runtime) => runtime.run({ message: "hi", conversationId: "c-dup", idempotencyKey: "provider-event-7" })));
      expect(results[0]!.runId).toBe(results[1]!.runId);
      const runs = await stateA.listRuns({ conversationId: "c-dup" });
      expect(runs.runs).toHaveLength(1);
      expect(runs.runs[0]!.status).toBe("completed");
      const events = await stateA.listEvents(results[0]!.runId);
      expect(events.filter((event) => event.type === "run.started")).toHaveLength(1);
    } finally {
      await Promise.all([stateA.close(), stateB.close()]);
    }
  }, 60_000);
});
