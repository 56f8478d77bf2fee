import { isAssemblyLineError, type NewRun, type RunStateChange } from "@assemblyline-agents/core";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { TEST_DATABASE_URL, dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgresStateAdapter");

let runCounter = 0;
const newRun = (overrides: Partial<NewRun> = {}): NewRun => ({
  id: `run-${++runCounter}`,
  agentId: "agent",
  agentRevision: "rev",
  modelSpec: "scripted/test",
  input: { message: "hi", metadata: {} },
  ...overrides,
});

/** Counts the statements (each one round trip) the adapter sends through the pool it was given. */
function countStatements(pool: pg.Pool): { count: () => number; reset: () => void } {
  let statements = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    statements += 1;
    return query(...args);
  };
  return { count: () => statements, reset: () => (statements = 0) };
}

describe.skipIf(!probe.available)("PostgresStateAdapter", () => {
  const schema = randomSchema();
  const pool = testPool();
  const statements = countStatements(pool);
  const state = new PostgresStateAdapter({ pool, schema });

  beforeAll(async () => {
    await state.migrate();
  });
  afterAll(async () => {
    await state.close();
    await dropSchema(pool, schema);
    await pool.end();
  });

  describe("round trips", () => {
    it("spends one statement per call over a typical run: createRun, 10 appends with changes, getRun, listEvents", async () => {
      statements.reset();
      const { run } = await state.createRun(newRun());
      for (let turn = 0; turn < 10; turn++) {
        const at = new Date().toISOString();
        const change: RunStateChange = {
          run: { status: turn === 9 ? "completed" : "running", ...(turn === 9 ? { output: { text: "done" } } : {}) },
          toolCall: {
            runId: run.id, callId: `call-${turn}`, toolName: "echo", input: { turn }, inputDigest: "d", status: "completed",
            output: { turn }, modelOutput: "ok", error: null, approvalId: null, question: null, createdAt: at, updatedAt: at,
          },
          step: { runId: run.id, key: `model:${turn}`, result: { text: "..." }, metadata: {}, createdAt: at },
          checkpoint: { runId: run.id, continuation: { v: 1, turn }, createdAt: at },
          ...(turn === 9 ? { delivery: { id: `delivery-${run.id}`, channel: "http", payload: { text: "done" } } } : {}),
        };
        await state.appendEvents(run.id, [{ type: "tool.called" }, { type: "tool.completed", data: { turn } }], change);
      }
      expect(await state.getRun(run.id)).toMatchObject({ status: "completed", lastSeq: 21 });
      expect(await state.listEvents(run.id)).toHaveLength(21);
      expect(statements.count()).toBe(13);
    });

    it("spends one statement on each other call", async () => {
      const { run } = await state.createRun(newRun({ status: "running" }));
      const calls: [string, () => Promise<unknown>][] = [
        ["listRuns", () => state.listRuns({ status: ["running"], limit: 5 })],
        ["markObserved", () => state.markObserved(run.id, 1)],
        ["acquireRunLease", () => state.acquireRunLease(run.id, "a", 1_000)],
        ["releaseRunLease", () => state.releaseRunLease(run.id, "a")],
        ["claimRecoverableRuns", () => state.claimRecoverableRuns({ owner: "a", ttlMs: 1_000 })],
        ["claimDeliveries", () => state.claimDeliveries({ owner: "a", ttlMs: 1_000 })],
        ["completeDelivery", () => state.completeDelivery("none", "a")],
        ["failDelivery", () => state.failDelivery("none", "a", "x", new Date())],
        ["appendConversationMessages", () => state.appendConversationMessages("c", [{ role: "user", content: "1", runId: null, createdAt: "t" }, { role: "assistant", content: "2", runId: null, createdAt: "t" }])],
        ["listConversationMessages", () => state.listConversationMessages("c", { limit: 1 })],
        ["claimDueSchedules", () => state.claimDueSchedules({ owner: "a", ttlMs: 1_000 })],
        ["putSetting", () => state.putSetting("k", { v: 1 }, { actor: "ops" })],
        ["listSettingAudit", () => state.listSettingAudit({ key: "k" })],
      ];
      for (const [name, call] of calls) {
        statements.reset();
        await call();
        expect([name, statements.count()]).toEqual([name, 1]);
      }
    });
  });

  describe("rows that break the contract", () => {
    it("names the run when an event's data is not a JSON object", async () => {
      const { run } = await state.createRun(newRun());
      await state.appendEvents(run.id, [{ type: "test.write", data: { ok: true } }]);
      await pool.query(`UPDATE "${schema}".run_events SET data = '[1, 2]' WHERE run_id = $1 AND seq = 2`, [run.id]);
      const error = await state.listEvents(run.id).catch((e: unknown) => e);
      expect(isAssemblyLineError(error, "AL_ERR_STATE_ROW_INVALID")).toBe(true);
      expect((error as Error).message).toContain(`event 2 of run "${run.id}"`);
      expect((error as Error).message).toContain("column data, which must be a JSON object");
      expect(error).toMatchObject({ details: { runId: run.id, seq: 2, column: "data" } });
    });

    it("names the run when its status was set by hand to one the contract lacks", async () => {
      const { run } = await state.createRun(newRun({ agentId: "hand-edited" }));
      await pool.query(`UPDATE "${schema}".runs SET status = 'exploded' WHERE id = $1`, [run.id]);
      const error = await state.getRun(run.id).catch((e: unknown) => e);
      expect(isAssemblyLineError(error, "AL_ERR_STATE_ROW_INVALID")).toBe(true);
      expect((error as Error).message).toContain(`run "${run.id}"`);
      expect((error as Error).message).toContain('"exploded" in column status');
      await expect(state.listRuns({ agentId: "hand-edited" })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID", details: { runId: run.id } });
    });

    it("names the run when its input is not the contract's shape", async () => {
      const { run } = await state.createRun(newRun());
      await pool.query(`UPDATE "${schema}".runs SET input = '"just text"' WHERE id = $1`, [run.id]);
      await expect(state.getRun(run.id)).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID", details: { runId: run.id, column: "input" } });
    });

    it("names the run and the call when a tool call's status is unknown", async () => {
      const { run } = await state.createRun(newRun());
      const at = new Date().toISOString();
      await state.appendEvents(run.id, [{ type: "tool.called" }], {
        toolCall: { runId: run.id, callId: "c1", toolName: "echo", input: {}, inputDigest: "d", status: "requested", output: null, modelOutput: null, error: null, approvalId: null, question: null, createdAt: at, updatedAt: at },
      });
      await pool.query(`UPDATE "${schema}".tool_calls SET status = 'maybe' WHERE run_id = $1`, [run.id]);
      await expect(state.listToolCalls(run.id)).rejects.toMatchObject({
        code: "AL_ERR_STATE_ROW_INVALID",
        message: expect.stringContaining(`tool call "c1" of run "${run.id}"`),
      });
    });
  });

  describe("values", () => {
    it("round-trips payloads PostgreSQL's JSON operators reject: NUL characters, bare arrays and strings", async () => {
      const { run } = await state.createRun(newRun({ input: { message: "a\u0000b", metadata: { list: [1, "2"] } } }));
      const at = new Date().toISOString();
      const [event] = await state.appendEvents(run.id, [{ type: "tool.completed", data: { out: "bin\u0000ary", nested: [[1], { "\u0000": 2 }] } }], {
        run: { output: ["a", "b"] },
        toolCall: { runId: run.id, callId: "c1", toolName: "bash", input: ["ls"], inputDigest: "d", status: "completed", output: "x\u0000y", modelOutput: "plain", error: null, approvalId: null, question: null, createdAt: at, updatedAt: at },
      });
      expect((await state.listEvents(run.id))[1]).toEqual(event);
      expect(event?.data).toEqual({ out: "bin\u0000ary", nested: [[1], { "\u0000": 2 }] });
      expect(await state.getRun(run.id)).toMatchObject({ input: { message: "a\u0000b", metadata: { list: [1, "2"] } }, output: ["a", "b"] });
      expect(await state.getToolCall(run.id, "c1")).toMatchObject({ input: ["ls"], output: "x\u0000y", modelOutput: "plain", createdAt: at });
    });

    it("refuses malformed input with the field's name before touching the database", async () => {
      const { run } = await state.createRun(newRun());
      statements.reset();
      await expect(state.appendEvents(run.id, [{ type: "x", data: [1] as never }])).rejects.toMatchObject({
        code: "AL_ERR_STATE_INPUT_INVALID",
        message: expect.stringContaining("events[0].data must be a plain JSON object"),
      });
      await expect(state.appendEvents(run.id, [{ type: "x" }], { run: { status: "paused" as never } })).rejects.toMatchObject({
        code: "AL_ERR_STATE_INPUT_INVALID",
        message: expect.stringContaining("change.run.status must be one of"),
      });
      await expect(state.createRun({ ...newRun(), input: { message: 1 } as never })).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID" });
      await expect(state.listRuns({ cursor: "not-ours" })).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID" });
      expect(statements.count()).toBe(0);
      expect((await state.getRun(run.id))?.lastSeq).toBe(1);
    });
  });
});

describe.skipIf(!probe.available)("PostgresStateAdapter.close()", () => {
  const schema = randomSchema();
  const admin = testPool();
  afterAll(async () => {
    await dropSchema(admin, schema);
    await admin.end();
  });

  it("ends the pool it opened, is idempotent, and refuses calls afterwards", async () => {
    const state = new PostgresStateAdapter({ connectionString: TEST_DATABASE_URL, schema });
    await state.createRun(newRun());
    expect(state.pool.totalCount).toBeGreaterThan(0);
    await state.close();
    await state.close();
    expect(state.pool.ended).toBe(true);
    expect(state.pool.totalCount).toBe(0);
    await expect(state.getRun("x")).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE", message: expect.stringContaining("was closed") });
  });

  it("leaves a pool it was given open for its owner", async () => {
    const pool = testPool();
    try {
      const state = new PostgresStateAdapter({ pool, schema });
      await state.getRun("x");
      await state.close();
      expect(pool.ended).toBe(false);
      expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      await expect(state.getRun("x")).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    } finally {
      await pool.end();
    }
  });
});

describe("PostgresStateAdapter without a reachable database", () => {
  it("reports an unreachable server as AL_ERR_STATE_UNAVAILABLE naming the call", async () => {
    // Port 1 on loopback refuses at once.
    const state = new PostgresStateAdapter({ connectionString: "postgres://postgres@127.0.0.1:1/test", schema: randomSchema() });
    try {
      await expect(state.getRun("r1")).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    } finally {
      await state.close();
    }
  });
});
