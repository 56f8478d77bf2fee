import type { UsageRecord } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { listStatement } from "../src/facets/usage.js";
import { probeDatabase } from "./support/database.js";
import { executedPlans, migratedUpTo, scratchSchemas } from "./support/scratch-schemas.js";

const probe = await probeDatabase("PostgreSQL usage by agent");

const usage = (id: string, runId: string, conversationId: string | null): UsageRecord => ({
  id,
  runId,
  conversationId,
  provider: "p",
  model: "m",
  inputTokens: 1,
  outputTokens: 1,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0.001,
  createdAt: "2026-01-01T00:00:00.000Z",
});

describe.skipIf(!probe.available)("PostgreSQL usage by agent", () => {
  const { admin, newSchema } = scratchSchemas("al_usage_agents");

  it("gives the recent usage a store held before agents the agent of its run when it migrates; older usage and usage whose run is gone stay every agent's", async () => {
    const schema = newSchema();
    const applied = await migratedUpTo(admin, schema, "usage by agent");
    for (const [id, agentId] of [["r-support", "support"], ["r-sub", "support/researcher"], ["r-eu", "support-eu"]]) {
      await admin.query(`INSERT INTO "${schema}".runs (id, agent_id, agent_revision, status, model_spec, input) VALUES ($1, $2, 'rev', 'completed', 'm', '{}')`, [id, agentId]);
    }
    // In order: a call of each agent's run today, one of a run that is gone, one of last year (no daily budget counts it).
    const today = new Date().toISOString();
    for (const [id, runId, at] of [["support's", "r-support", today], ["researcher's", "r-sub", today], ["eu's", "r-eu", today], ["gone run's", "r-gone", today], ["last year's", "r-eu", "2025-01-01T00:00:00.000Z"]]) {
      await admin.query(
        `INSERT INTO "${schema}".usage (id, run_id, conversation_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, created_at)
         VALUES ($1, $2, 'shared', 'p', 'm', 1, 1, 0, 0, 0.001, $3)`,
        [id, runId, at],
      );
    }
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      expect((await state.migrate()).applied).toEqual(applied);
      const of = async (agentId?: string) => (await state.listUsage({ conversationId: "shared", ...(agentId ? { agentId } : {}) })).map((u) => [u.id, u.agentId]);
      expect(await of("support")).toEqual([["support's", "support"], ["researcher's", "support/researcher"], ["gone run's", null], ["last year's", null]]);
      expect(await of("support-eu")).toEqual([["eu's", "support-eu"], ["gone run's", null], ["last year's", null]]);
      expect(await of()).toEqual([["support's", "support"], ["researcher's", "support/researcher"], ["eu's", "support-eu"], ["gone run's", null], ["last year's", null]]);
    } finally {
      await state.close();
    }
  });

  it("refuses an agentId that is not a non-empty string, naming the field", async () => {
    const state = new PostgresStateAdapter({ pool: admin, schema: newSchema() });
    try {
      for (const agentId of ["", 7]) {
        await expect(state.listUsage({ conversationId: "shared", agentId: agentId as string })).rejects.toThrow(/listUsage: filter\.agentId must be a non-empty string/);
        await expect(state.recordUsage({ ...usage("u1", "r1", "shared"), agentId: agentId as string })).rejects.toThrow(/record\.agentId must be a non-empty string/);
      }
      expect(await state.listUsage({ conversationId: "shared" })).toEqual([]);
    } finally {
      await state.close();
    }
  });

  it("keeps createdAt as an ISO UTC time, and refuses one that is no time, naming the field", async () => {
    const state = new PostgresStateAdapter({ pool: admin, schema: newSchema() });
    try {
      await state.recordUsage({ ...usage("offset", "r1", "shared"), createdAt: "2020-01-01T12:00:00+05:00" });
      expect((await state.listUsage({ runId: "r1" })).map((u) => u.createdAt)).toEqual(["2020-01-01T07:00:00.000Z"]);
      await expect(state.recordUsage({ ...usage("bad", "r1", "shared"), createdAt: "yesterday" })).rejects.toMatchObject({
        code: "AL_ERR_STATE_INPUT_INVALID",
        message: expect.stringContaining("record.createdAt must be an ISO-8601 time"),
      });
      expect((await state.listUsage({ runId: "r1" })).map((u) => u.id)).toEqual(["offset"]);
    } finally {
      await state.close();
    }
  });

  it("lists an agent's usage of a conversation through usage_by_conversation_agent, never reading the other agents' rows", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      await state.migrate();
      const rows = async (count: number, agentId: string | null, conversationId = "shared") =>
        admin.query(
          `INSERT INTO "${schema}".usage (id, run_id, conversation_id, agent_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, created_at)
           SELECT $1 || i, 'run', $2, $3::text, 'p', 'm', 1, 1, 0, 0, 0.001, 't' FROM generate_series(1, $4) AS i`,
          [`${conversationId}-${agentId}-`, conversationId, agentId, count],
        );
      await rows(10, null);
      await rows(100, "support");
      await rows(20, "support/researcher");
      await rows(20_000, "support-eu");
      await rows(5_000, "support", "other");
      await admin.query(`ANALYZE "${schema}".usage`);
      const listing = listStatement(`"${schema}"`, { conversationId: "shared", agentId: "support" });
      const client = await admin.connect();
      try {
        await client.query(`PREPARE listing AS ${listing.text}`);
        const literal = (value: unknown) => `'${String(value)}'`;
        // The plan for any agent (generic) and for this one's values (custom): both read only its rows and the ones without an agent.
        for (const mode of ["force_generic_plan", "force_custom_plan"]) {
          await client.query(`SET plan_cache_mode = ${mode}`);
          const { rows: lines } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE listing (${listing.values.map(literal).join(", ")})`);
          const plan = lines.map((line) => line["QUERY PLAN"]).join("\n");
          expect(plan, `${mode}:\n${plan}`).not.toContain("Seq Scan");
          // Three ranges: the agent's rows, its subagents' (under "support/"), and those without an agent.
          expect(plan.match(/Index Scan on usage_by_conversation_agent/g), `${mode}:\n${plan}`).toHaveLength(3);
          for (const scanned of plan.matchAll(/(?:Index|Bitmap Heap|Bitmap Index) Scan.*\(actual rows=(\d+)/g)) expect(Number(scanned[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(130);
          for (const removed of plan.matchAll(/Rows Removed by (?:Filter|Index Recheck): (\d+)/g)) expect(Number(removed[1]), `${mode}:\n${plan}`).toBe(0);
        }
      } finally {
        client.release();
      }
      expect(await state.listUsage({ conversationId: "shared", agentId: "support" })).toHaveLength(130);
    } finally {
      await state.close();
    }
  });
  it("lists a conversation's usage since a time from usage_by_conversation_agent, never reading the agent's older rows", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      await state.migrate();
      const rows = async (count: number, agentId: string | null, createdAt: string) =>
        admin.query(
          `INSERT INTO "${schema}".usage (id, run_id, conversation_id, agent_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, created_at)
           SELECT $1 || i, 'run', 'shared', $2::text, 'p', 'm', 1, 1, 0, 0, 0.001, $3 FROM generate_series(1, $4) AS i`,
          [`${agentId}-${createdAt}-`, agentId, createdAt, count],
        );
      await rows(20_000, "support", "2025-06-01T10:00:00.000Z");
      await rows(2_000, null, "2025-06-01T10:00:00.000Z");
      await rows(2_000, "support/researcher", "2025-06-01T10:00:00.000Z");
      await rows(4, "support", "2026-03-02T08:00:00.000Z");
      await rows(2, "support/researcher", "2026-03-02T09:00:00.000Z");
      await rows(1, null, "2026-03-02T10:00:00.000Z");
      await admin.query(`ANALYZE "${schema}".usage`);
      const listing = listStatement(`"${schema}"`, { conversationId: "shared", agentId: "support", since: "2026-03-02T00:00:00.000Z" });
      // The plan for any values (generic) and for these (custom): the day's rows, read from the index's ranges.
      for (const [mode, plan] of Object.entries(await executedPlans(admin, listing))) {
        expect(plan, `${mode}:\n${plan}`).not.toContain("Seq Scan");
        expect(plan, `${mode}:\n${plan}`).toContain("usage_by_conversation_agent");
        // The subagents' range is read by its agent ids, the day tested in the index: at most their 2,002 index entries, 2 rows from the table.
        for (const scanned of plan.matchAll(/(?:Index Scan|Bitmap Heap Scan).*\(actual rows=(\d+)/g)) expect(Number(scanned[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(7);
        for (const removed of plan.matchAll(/Rows Removed by (?:Filter|Index Recheck): (\d+)/g)) expect(Number(removed[1]), `${mode}:\n${plan}`).toBe(0);
      }
      expect((await state.listUsage({ conversationId: "shared", agentId: "support", since: "2026-03-02T00:00:00.000Z" })).map((u) => u.createdAt)).toEqual([
        ...Array(4).fill("2026-03-02T08:00:00.000Z"),
        ...Array(2).fill("2026-03-02T09:00:00.000Z"),
        "2026-03-02T10:00:00.000Z",
      ]);
      await expect(state.listUsage({ conversationId: "shared", since: "yesterday" })).rejects.toThrow(/listUsage: filter\.since must be an ISO-8601 time/);
    } finally {
      await state.close();
    }
  });
});
