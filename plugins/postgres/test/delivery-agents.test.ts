import { afterAll, describe, expect, it } from "vitest";
import { MIGRATIONS, PostgresStateAdapter, migrateSchema } from "../src/index.js";
import { claimStatement } from "../src/facets/deliveries.js";
import { dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgreSQL deliveries by agent");

describe.skipIf(!probe.available)("PostgreSQL deliveries by agent", () => {
  const prefix = randomSchema("al_deliv_agents");
  let counter = 0;
  const admin = testPool();
  const newSchema = () => `${prefix}_${++counter}`;

  afterAll(async () => {
    const { rows } = await admin.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [prefix]);
    for (const row of rows) await dropSchema(admin, row.nspname);
    await admin.end();
  });

  /** `count` pending replies due now, of runs of `agentId` (one run each), written as SQL rows. */
  async function dueReplies(schema: string, agentId: string, count: number, withAgentColumn = true): Promise<void> {
    const tag = agentId.replaceAll("/", "_");
    await admin.query(
      `INSERT INTO "${schema}".runs (id, agent_id, agent_revision, status, model_spec, input)
       SELECT 'run-${tag}-' || i, $1, 'rev', 'completed', 'm', '{}' FROM generate_series(1, $2) AS i`,
      [agentId, count],
    );
    await admin.query(
      `INSERT INTO "${schema}".deliveries (id, run_id, channel, payload, status, attempts, available_at, created_at, updated_at${withAgentColumn ? ", agent_id" : ""})
       SELECT 'reply-${tag}-' || i, 'run-${tag}-' || i, 'chat', '{}', 'pending', 0, now() - interval '1 minute', now(), now()${withAgentColumn ? ", $2::text" : ""}
       FROM generate_series(1, $1) AS i`,
      withAgentColumn ? [count, agentId] : [count],
    );
  }

  it("gives the pending deliveries a store held before agents their run's agent when it migrates", async () => {
    const schema = newSchema();
    const agents = MIGRATIONS.find((migration) => migration.name === "deliveries by agent")!;
    await migrateSchema(
      admin,
      schema,
      MIGRATIONS.filter((migration) => migration.version < agents.version),
    );
    for (const agentId of ["support", "support/researcher", "support-eu"]) await dueReplies(schema, agentId, 2, false);
    // Delivered long ago: never claimed again, so the migration leaves it as it is.
    await admin.query(`UPDATE "${schema}".deliveries SET status = 'delivered' WHERE id = 'reply-support-eu-2'`);
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      expect((await state.migrate()).applied).toEqual(MIGRATIONS.filter((migration) => migration.version >= agents.version).map((migration) => migration.version));
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

  it("claims an agent's replies through deliveries_pending_by_agent, never reading another agent's 25,000 due ones; any claim leases by primary key", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      await state.migrate();
      await dueReplies(schema, "gone-agent", 25_000);
      await dueReplies(schema, "support", 30);
      await dueReplies(schema, "support/researcher", 3);
      await admin.query(`ANALYZE "${schema}".deliveries`);
      const { text, values } = claimStatement(`"${schema}"`, { owner: "support-host", ttlMs: 60_000, now: undefined, limit: 10, agentId: "support" });
      const client = await admin.connect();
      try {
        await client.query(`PREPARE claiming AS ${text}`);
        const literal = (value: unknown) => (value === null ? "NULL" : typeof value === "number" ? String(value) : `'${String(value).replaceAll("'", "''")}'`);
        // The plan for any agent (generic) and for this one's values (custom): both read only the agent's rows.
        for (const mode of ["force_generic_plan", "force_custom_plan"]) {
          await client.query("BEGIN");
          try {
            await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
            const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE claiming (${values.map(literal).join(", ")})`);
            const plan = rows.map((row) => row["QUERY PLAN"]).join("\n");
            expect(plan, mode).not.toContain("Seq Scan");
            expect(plan, `${mode}:\n${plan}`).toContain("deliveries_pending_by_agent");
            expect(plan, `${mode}:\n${plan}`).not.toMatch(/using deliveries_pending on/);
            // What the claim reads of the table: the agent's 33 rows at most, none of the other agent's.
            for (const scanned of plan.matchAll(/(?:Index|Bitmap Heap|Bitmap Index) Scan.*\(actual rows=(\d+)/g)) expect(Number(scanned[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(33);
            for (const removed of plan.matchAll(/Rows Removed by Filter: (\d+)/g)) expect(Number(removed[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(33);
          } finally {
            await client.query("ROLLBACK");
          }
        }
      } finally {
        client.release();
      }
      expect(await state.claimDeliveries({ owner: "support-host", ttlMs: 60_000, limit: 40, agentId: "support" })).toHaveLength(33);
      // Without an agent, the claim leases what it picked by primary key: no plan scans the table.
      const unscoped = claimStatement(`"${schema}"`, { owner: "any-host", ttlMs: 60_000, now: undefined, limit: 10, agentId: undefined });
      const other = await admin.connect();
      try {
        await other.query(`PREPARE claiming_any AS ${unscoped.text}`);
        for (const mode of ["force_generic_plan", "force_custom_plan"]) {
          await other.query("BEGIN");
          try {
            await other.query(`SET LOCAL plan_cache_mode = ${mode}`);
            const { rows } = await other.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE claiming_any ('any-host', 60000, NULL, 10)`);
            const plan = rows.map((row) => row["QUERY PLAN"]).join("\n");
            expect(plan, `${mode}:\n${plan}`).not.toContain("Seq Scan");
            expect(plan, `${mode}:\n${plan}`).toMatch(/Index Scan on deliveries_pkey|Index Scan using deliveries_pkey/);
          } finally {
            await other.query("ROLLBACK");
          }
        }
      } finally {
        other.release();
      }
    } finally {
      await state.close();
    }
  });
});
