import { describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { runListStatement } from "../src/facets/runs.js";
import { probeDatabase } from "./support/database.js";
import { executedPlans, insertRuns, migratedUpTo, scratchSchemas } from "./support/scratch-schemas.js";

const probe = await probeDatabase("PostgreSQL unfinished runs by conversation");

describe.skipIf(!probe.available)("PostgreSQL unfinished runs by conversation", () => {
  const { admin, newSchema } = scratchSchemas("al_unfinished_runs");

  /** `count` runs of agent "support" in `conversationId` with `status`, ids `<idPrefix>-1` onwards. */
  const runs = (schema: string, idPrefix: string, conversationId: string | null, status: string, count: number) =>
    insertRuns(admin, schema, { idPrefix, agentId: "support", status, count, conversationId });

  it("adds the index to a store migrated before it", async () => {
    const schema = newSchema();
    const applied = await migratedUpTo(admin, schema, "unfinished runs by conversation");
    await runs(schema, "done", "c-long", "completed", 3);
    await runs(schema, "waiting", "c-long", "queued", 1);
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      expect((await state.migrate()).applied).toEqual(applied);
      const { rows } = await admin.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'runs'", [schema]);
      expect(rows.map((row) => row.indexname)).toContain("runs_unfinished_by_conversation");
      const page = await state.listRuns({ agentId: "support", conversationId: "c-long", status: ["queued", "running"] });
      expect(page.runs.map((run) => run.id)).toEqual(["waiting-1"]);
    } finally {
      await state.close();
    }
  });

  it("lists a conversation's unfinished runs without reading the 5,000 turns it finished, in any plan", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      await state.migrate();
      await runs(schema, "done", "c-long", "completed", 5_000);
      await runs(schema, "running", "c-long", "running", 1);
      await runs(schema, "queued", "c-long", "queued", 2);
      await runs(schema, "other", "c-other", "queued", 50);
      await runs(schema, "none", null, "queued", 50);
      await admin.query(`ANALYZE "${schema}".runs`);
      const filter = { agentId: "support", conversationId: "c-long", status: ["running", "queued"] as ["running", "queued"], limit: 20 };
      // The plan for any conversation (generic, a connection's after five runs) and for this one's values (custom).
      for (const [mode, plan] of Object.entries(await executedPlans(admin, runListStatement(`"${schema}"`, filter, 20)))) {
        expect(plan, `${mode}:\n${plan}`).not.toContain("Seq Scan");
        expect(plan, `${mode}:\n${plan}`).toContain("runs_unfinished_by_conversation");
        for (const scanned of plan.matchAll(/(?:Index|Bitmap Heap|Bitmap Index) Scan.*\(actual rows=(\d+)/g)) expect(Number(scanned[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(3);
        for (const removed of plan.matchAll(/Rows Removed by Filter: (\d+)/g)) expect(Number(removed[1]), `${mode}:\n${plan}`).toBe(0);
      }
      // Newest first, paged as any listing.
      const first = await state.listRuns({ ...filter, limit: 2 });
      expect(first.runs.map((run) => run.id)).toEqual(["queued-2", "queued-1"]);
      const next = await state.listRuns({ ...filter, limit: 2, cursor: first.nextCursor! });
      expect(next).toMatchObject({ runs: [{ id: "running-1", status: "running" }], nextCursor: null });
      // Another agent's runs of the same conversation id are not this agent's.
      expect((await state.listRuns({ ...filter, agentId: "billing" })).runs).toEqual([]);
    } finally {
      await state.close();
    }
  });
});
