import { execFile, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresState } from "@assemblyline-agents/postgres";
import { buildAgent } from "@assemblyline-agents/runtime";
import { TEST_DATABASE_URL, probeDatabase } from "../plugins/postgres/test/support/database.js";

const database = await probeDatabase("postgres-zombie");
const child = resolve(import.meta.dirname, "fixtures/zombie-child.mjs");
const work = mkdtempSync(join(tmpdir(), "al-zombie-"));
const schema = `al_zombie_${process.pid}_${Date.now().toString(36)}`;
const agentDir = join(work, "agent");
let artifactRoot = "";

beforeAll(async () => {
  cpSync(resolve(import.meta.dirname, "fixtures/zombie-agent"), agentDir, { recursive: true });
  artifactRoot = (await buildAgent(agentDir)).artifactRoot;
});
afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  if (!database.available) return;
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

describe.skipIf(!database.available)("a replica frozen past its lease (SIGSTOP) and woken after another finished the run", () => {
  it("writes nothing and applies no side effect once it wakes: 0 duplicate events, 0 effects after the completion", async () => {
    const ledger = join(work, "ledger.log");
    const marker = join(work, "mid-call");
    const script = join(agentDir, "script.json");
    const env = (name: string, workMs: number) => ({ ...process.env, ZOMBIE_LEDGER: ledger, ZOMBIE_MARKER: marker, REPLICA_NAME: name, ZOMBIE_WORK_MS: String(workMs) });

    // Replica A starts the run; the test freezes it while its tool is working.
    const a = spawn(process.execPath, [child, artifactRoot, TEST_DATABASE_URL, schema, "start", script], { env: env("a", 1_500), stdio: ["ignore", "pipe", "pipe"] });
    let aOut = "";
    let aErr = "";
    a.stdout.on("data", (chunk: Buffer) => (aOut += chunk.toString()));
    a.stderr.on("data", (chunk: Buffer) => (aErr += chunk.toString()));
    const aExited = new Promise<number | null>((resolveExit) => a.on("exit", (code) => resolveExit(code)));
    try {
      const started = Date.now();
      while (!existsSync(marker)) {
        if (Date.now() - started > 30_000) throw new Error(`replica a never reached the tool call:\n${aErr}`);
        await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      }
      a.kill("SIGSTOP");

      // Replica B takes over once A's 1 s lease expires (A's session is alive: no early takeover), and finishes.
      const { stdout } = await promisify(execFile)(process.execPath, [child, artifactRoot, TEST_DATABASE_URL, schema, "recover", script], { env: env("b", 0), timeout: 60_000 });
      const finished = JSON.parse(stdout) as { status: string; runId: string };
      expect(finished.status).toBe("completed");
      const state = await createPostgresState({ connectionString: TEST_DATABASE_URL, schema });
      try {
        const before = await state.listEvents(finished.runId);
        expect(before.filter((event) => event.type === "tool.completed")).toHaveLength(1);
        const effectsAtCompletion = readFileSync(ledger, "utf8").trim().split("\n");
        expect(effectsAtCompletion).toEqual([expect.stringMatching(/^effect b /)]);

        // A wakes up: its tool finishes its work and tries to go on.
        a.kill("SIGCONT");
        expect(await aExited).toBe(0);
        expect(JSON.parse(aOut)).toEqual({ error: "AL_ERR_RUN_LEASE_LOST" });

        const after = await state.listEvents(finished.runId);
        expect(after).toEqual(before);
        expect(after.map((event) => event.seq)).toEqual(after.map((_, index) => index + 1));
        expect(after.filter((event) => event.type === "run.completed")).toHaveLength(1);
        expect(after.filter((event) => event.type === "tool.completed")).toHaveLength(1);
        expect(readFileSync(ledger, "utf8").trim().split("\n")).toEqual(effectsAtCompletion);
        expect(await state.getRun(finished.runId)).toMatchObject({ status: "completed", lease: null });
      } finally {
        await state.close();
      }
    } finally {
      if (a.exitCode === null && a.signalCode === null) {
        a.kill("SIGCONT");
        a.kill("SIGKILL");
      }
    }
  }, 120_000);
});
