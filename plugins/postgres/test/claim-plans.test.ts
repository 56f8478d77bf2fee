import { describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { claimStatement } from "../src/facets/deliveries.js";
import { recoverableClaimStatement } from "../src/facets/runs.js";
import { scheduleClaimStatement } from "../src/facets/schedules.js";
import { probeDatabase } from "./support/database.js";
import { executedPlans, scratchSchemas } from "./support/scratch-schemas.js";

const probe = await probeDatabase("PostgreSQL claim plans");

/**
 * The state's claims are prepared statements: after five runs on a connection, PostgreSQL may
 * plan them once for any values (a generic plan), whose estimate of how many rows a claim picks
 * knows nothing of its limit. With a backlog of claimable rows, a plan that joins the picked rows
 * back to their table would read the whole table for each claim; these lease them by primary key.
 */
describe.skipIf(!probe.available)("PostgreSQL claims beside a backlog of 25,000 claimable rows", () => {
  const { admin, newSchema } = scratchSchemas("al_claim_plans");
  const BACKLOG = 25_003;

  /** A migrated schema, with `insert` run and the table analyzed. */
  async function schemaWith(table: string, insert: (schema: string) => string): Promise<string> {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    await state.migrate();
    await state.close();
    await admin.query(insert(schema), [BACKLOG]);
    await admin.query(`ANALYZE "${schema}".${table}`);
    return schema;
  }

  it("claims recoverable runs by primary key, in any plan", async () => {
    const schema = await schemaWith(
      "runs",
      (s) => `INSERT INTO "${s}".runs (id, agent_id, agent_revision, status, model_spec, input)
        SELECT 'run-' || i, CASE WHEN i <= 3 THEN 'support' ELSE 'gone-agent' END, 'rev', 'queued', 'm', '{}' FROM generate_series(1, $1) AS i`,
    );
    for (const agentId of [undefined, "support"]) {
      const claim = { owner: "host", ttlMs: 60_000, now: undefined, limit: 10, agentId };
      for (const [mode, plan] of Object.entries(await executedPlans(admin, recoverableClaimStatement(`"${schema}"`, claim, null)))) {
        expect(plan, `${mode}, agent ${agentId}:\n${plan}`).not.toContain("Seq Scan");
        expect(plan, `${mode}, agent ${agentId}:\n${plan}`).toMatch(/Index Scan (on|using) runs_pkey/);
      }
    }
  });

  it("claims due schedules by primary key, in any plan", async () => {
    const schema = await schemaWith(
      "schedules",
      (s) => `INSERT INTO "${s}".schedules (id, agent_id, interval_ms, next_run_at, payload, enabled)
        SELECT 'job-' || i, CASE WHEN i <= 3 THEN 'support' ELSE 'gone-agent' END, 60000, now() - interval '1 minute', '{}', true FROM generate_series(1, $1) AS i`,
    );
    for (const agentId of [undefined, "support"]) {
      const claim = { owner: "host", ttlMs: 60_000, now: undefined, limit: 10, agentId };
      for (const [mode, plan] of Object.entries(await executedPlans(admin, scheduleClaimStatement(`"${schema}"`, claim)))) {
        expect(plan, `${mode}, agent ${agentId}:\n${plan}`).not.toContain("Seq Scan");
        expect(plan, `${mode}, agent ${agentId}:\n${plan}`).toMatch(/Index Scan (on|using) schedules_pkey/);
      }
    }
  });

  it("claims due deliveries by primary key, in any plan", async () => {
    const schema = await schemaWith(
      "deliveries",
      (s) => `WITH runs AS (
          INSERT INTO "${s}".runs (id, agent_id, agent_revision, status, model_spec, input)
          SELECT 'run-' || i, 'gone-agent', 'rev', 'completed', 'm', '{}' FROM generate_series(1, $1) AS i RETURNING id, agent_id
        )
        INSERT INTO "${s}".deliveries (id, run_id, agent_id, channel, payload, status, attempts, available_at, created_at, updated_at)
        SELECT 'reply-' || id, id, agent_id, 'chat', '{}', 'pending', 0, now() - interval '1 minute', now(), now() FROM runs`,
    );
    for (const agentId of [undefined, "support"]) {
      const claim = { owner: "host", ttlMs: 60_000, now: undefined, limit: 10, agentId };
      for (const [mode, plan] of Object.entries(await executedPlans(admin, claimStatement(`"${schema}"`, claim)))) {
        expect(plan, `${mode}, agent ${agentId}:\n${plan}`).not.toContain("Seq Scan");
        if (agentId === undefined) expect(plan, `${mode}:\n${plan}`).toMatch(/Index Scan (on|using) deliveries_pkey/);
      }
    }
  });
});
