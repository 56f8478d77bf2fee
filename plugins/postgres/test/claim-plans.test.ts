import { afterAll, describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { recoverableClaimStatement } from "../src/facets/runs.js";
import { scheduleClaimStatement } from "../src/facets/schedules.js";
import { dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgreSQL claim plans");

/**
 * The state's claims are prepared statements: after five runs on a connection, PostgreSQL may
 * plan them once for any values (a generic plan), whose estimate of how many rows a claim picks
 * knows nothing of its limit. With a backlog of claimable rows, a plan that joins the picked rows
 * back to their table would read the whole table for each claim; these lease them by primary key.
 */
describe.skipIf(!probe.available)("PostgreSQL claims beside a backlog of 25,000 claimable rows", () => {
  const schema = randomSchema("al_claim_plans");
  const admin = testPool();
  const state = new PostgresStateAdapter({ pool: admin, schema });

  afterAll(async () => {
    await state.close();
    await dropSchema(admin, schema);
    await admin.end();
  });

  async function plans(statement: { text: string; values: unknown[] }): Promise<Record<string, string>> {
    const client = await admin.connect();
    const literal = (value: unknown) => (value === null ? "NULL" : typeof value === "number" ? String(value) : `'${String(value).replaceAll("'", "''")}'`);
    const found: Record<string, string> = {};
    try {
      await client.query(`PREPARE claiming AS ${statement.text}`);
      for (const mode of ["force_generic_plan", "force_custom_plan"]) {
        await client.query("BEGIN");
        try {
          await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
          const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE claiming (${statement.values.map(literal).join(", ")})`);
          found[mode] = rows.map((row) => row["QUERY PLAN"]).join("\n");
        } finally {
          await client.query("ROLLBACK");
        }
      }
      await client.query("DEALLOCATE claiming");
    } finally {
      client.release();
    }
    return found;
  }

  it("claims recoverable runs by primary key, in any plan", async () => {
    await state.migrate();
    await admin.query(
      `INSERT INTO "${schema}".runs (id, agent_id, agent_revision, status, model_spec, input)
       SELECT 'run-' || i, CASE WHEN i <= 3 THEN 'support' ELSE 'gone-agent' END, 'rev', 'queued', 'm', '{}' FROM generate_series(1, 25003) AS i`,
    );
    await admin.query(`ANALYZE "${schema}".runs`);
    for (const agentId of [undefined, "support"]) {
      const claim = { owner: "host", ttlMs: 60_000, now: undefined, limit: 10, agentId };
      for (const [mode, plan] of Object.entries(await plans(recoverableClaimStatement(`"${schema}"`, claim, null)))) {
        expect(plan, `${mode}, agent ${agentId}:\n${plan}`).not.toContain("Seq Scan");
        expect(plan, `${mode}, agent ${agentId}:\n${plan}`).toMatch(/Index Scan (on|using) runs_pkey/);
      }
    }
  });

  it("claims due schedules by primary key, in any plan", async () => {
    await state.migrate();
    await admin.query(
      `INSERT INTO "${schema}".schedules (id, agent_id, interval_ms, next_run_at, payload, enabled)
       SELECT 'job-' || i, CASE WHEN i <= 3 THEN 'support' ELSE 'gone-agent' END, 60000, now() - interval '1 minute', '{}', true FROM generate_series(1, 25003) AS i`,
    );
    await admin.query(`ANALYZE "${schema}".schedules`);
    for (const agentId of [undefined, "support"]) {
      const claim = { owner: "host", ttlMs: 60_000, now: undefined, limit: 10, agentId };
      for (const [mode, plan] of Object.entries(await plans(scheduleClaimStatement(`"${schema}"`, claim)))) {
        expect(plan, `${mode}, agent ${agentId}:\n${plan}`).toMatch(/Index Scan (on|using) schedules_pkey/);
        expect(plan, `${mode}, agent ${agentId}:\n${plan}`).not.toContain("Seq Scan");
      }
    }
  });
});
