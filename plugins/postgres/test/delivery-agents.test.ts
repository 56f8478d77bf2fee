import { describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { claimStatement } from "../src/facets/deliveries.js";
import { probeDatabase } from "./support/database.js";
import { executedPlans, insertRuns, migratedUpTo, scratchSchemas } from "./support/scratch-schemas.js";

const probe = await probeDatabase("PostgreSQL deliveries by agent");

describe.skipIf(!probe.available)("PostgreSQL deliveries by agent", () => {
  const { admin, newSchema } = scratchSchemas("al_deliv_agents");

  /** `count` pending replies due now, of runs of `agentId` (one run each), written as SQL rows. */
  async function dueReplies(schema: string, agentId: string, count: number, withAgentColumn = true): Promise<void> {
    const tag = agentId.replaceAll("/", "_");
    await insertRuns(admin, schema, { idPrefix: `run-${tag}`, agentId, status: "completed", count });
    await admin.query(
      `INSERT INTO "${schema}".deliveries (id, run_id, channel, payload, status, attempts, available_at, created_at, updated_at${withAgentColumn ? ", agent_id" : ""})
       SELECT 'reply-${tag}-' || i, 'run-${tag}-' || i, 'chat', '{}', 'pending', 0, now() - interval '1 minute', now(), now()${withAgentColumn ? ", $2::text" : ""}
       FROM generate_series(1, $1) AS i`,
      withAgentColumn ? [count, agentId] : [count],
    );
  }

  it("gives the pending deliveries a store held before agents their run's agent when it migrates", async () => {
    const schema = newSchema();
    const applied = await migratedUpTo(admin, schema, "deliveries by agent");
    for (const agentId of ["support", "support/researcher", "support-eu"]) await dueReplies(schema, agentId, 2, false);
    // Delivered long ago: never claimed again, so the migration leaves it as it is.
    await admin.query(`UPDATE "${schema}".deliveries SET status = 'delivered' WHERE id = 'reply-support-eu-2'`);
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      expect((await state.migrate()).applied).toEqual(applied);
      const { rows } = await admin.query<{ id: string; agent_id: string }>(`SELECT id, agent_id FROM "${schema}".deliveries ORDER BY id`);
      expect(rows.map((row) => [row.id, row.agent_id])).toEqual([
        ["reply-support-1", "support"],
        ["reply-support-2", "support"],
        ["reply-support-eu-1", "support-eu"],
        ["reply-support-eu-2", null],
        ["reply-support_researcher-1", "support/researcher"],
        ["reply-support_researcher-2", "support/researcher"],
      ]);
      const claimed = await state.claimDeliveries({ owner: "support-host", ttlMs: 60_000, agentId: "support" });
      expect(claimed.map((delivery) => delivery.id).sort()).toEqual(["reply-support-1", "reply-support-2", "reply-support_researcher-1", "reply-support_researcher-2"]);
    } finally {
      await state.close();
    }
  });

  it("writes the run's agent with each delivery appendEvents enqueues", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      const { run } = await state.createRun({ id: "run-1", agentId: "support/researcher", agentRevision: "rev", modelSpec: "m", input: { message: "hi", metadata: {} } });
      await state.appendEvents(run.id, [{ type: "run.completed", data: {} }], { delivery: { id: "reply-1", channel: "chat", payload: { text: "done" } } });
      const { rows } = await admin.query<{ agent_id: string }>(`SELECT agent_id FROM "${schema}".deliveries WHERE id = 'reply-1'`);
      expect(rows).toEqual([{ agent_id: "support/researcher" }]);
      expect((await state.claimDeliveries({ owner: "h", ttlMs: 60_000, agentId: "support-eu" })).map((delivery) => delivery.id)).toEqual([]);
      expect((await state.claimDeliveries({ owner: "h", ttlMs: 60_000, agentId: "support" })).map((delivery) => delivery.id)).toEqual(["reply-1"]);
    } finally {
      await state.close();
    }
  });

  it("claims an agent's replies through deliveries_pending_by_agent, never reading another agent's 25,000 due ones", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      await state.migrate();
      await dueReplies(schema, "gone-agent", 25_000);
      await dueReplies(schema, "support", 30);
      await dueReplies(schema, "support/researcher", 3);
      await admin.query(`ANALYZE "${schema}".deliveries`);
      const claim = claimStatement(`"${schema}"`, { owner: "support-host", ttlMs: 60_000, now: undefined, limit: 10, agentId: "support" });
      // The plan for any agent (generic) and for this one's values (custom): both read only the agent's rows.
      for (const [mode, plan] of Object.entries(await executedPlans(admin, claim))) {
        expect(plan, `${mode}:\n${plan}`).not.toContain("Seq Scan");
        expect(plan, `${mode}:\n${plan}`).toContain("deliveries_pending_by_agent");
        expect(plan, `${mode}:\n${plan}`).not.toMatch(/using deliveries_pending on/);
        // What the claim reads of the table: the agent's 33 rows at most, none of the other agent's.
        for (const scanned of plan.matchAll(/(?:Index|Bitmap Heap|Bitmap Index) Scan.*\(actual rows=(\d+)/g)) expect(Number(scanned[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(33);
        for (const removed of plan.matchAll(/Rows Removed by Filter: (\d+)/g)) expect(Number(removed[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(33);
      }
      expect(await state.claimDeliveries({ owner: "support-host", ttlMs: 60_000, limit: 40, agentId: "support" })).toHaveLength(33);
    } finally {
      await state.close();
    }
  });
});
