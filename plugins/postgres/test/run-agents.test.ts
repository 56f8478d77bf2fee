import { describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { recoverableClaimStatement } from "../src/facets/runs.js";
import { probeDatabase } from "./support/database.js";
import { executedPlans, insertRuns, migratedUpTo, scratchSchemas } from "./support/scratch-schemas.js";

const probe = await probeDatabase("PostgreSQL recoverable runs by agent");

describe.skipIf(!probe.available)("PostgreSQL recoverable runs by agent", () => {
  const { admin, newSchema } = scratchSchemas("al_run_agents");

  /** `count` queued runs of `agentId` that no host holds (a mailbox's), written as SQL rows. */
  async function queuedRuns(schema: string, agentId: string, count: number): Promise<void> {
    await insertRuns(admin, schema, { idPrefix: `run-${agentId.replaceAll("/", "_")}`, agentId, status: "queued", count });
  }

  /** The index names of the table `runs` in `schema`. */
  async function runIndexes(schema: string): Promise<string[]> {
    const { rows } = await admin.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'runs' ORDER BY indexname", [schema]);
    return rows.map((row) => row.indexname);
  }

  it("moves a store held before it to the index by agent, and claims the unfinished runs it held by agent", async () => {
    const schema = newSchema();
    const applied = await migratedUpTo(admin, schema, "recoverable runs by agent");
    for (const agentId of ["support", "support/researcher", "support-eu"]) await queuedRuns(schema, agentId, 2);
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      expect((await state.migrate()).applied).toEqual(applied);
      // Replaced, not added: a run's status writes update as many indexes as before.
      expect(await runIndexes(schema)).toContain("runs_recoverable_by_agent");
      expect(await runIndexes(schema)).not.toContain("runs_recoverable");
      const claimed = await state.claimRecoverableRuns({ owner: "support-host", ttlMs: 60_000, agentId: "support" });
      expect(claimed.map((run) => run.id)).toEqual(["run-support-1", "run-support-2", "run-support_researcher-1", "run-support_researcher-2"]);
      const anyAgent = await state.claimRecoverableRuns({ owner: "any-host", ttlMs: 60_000 });
      expect(anyAgent.map((run) => run.id)).toEqual(["run-support-eu-1", "run-support-eu-2"]);
    } finally {
      await state.close();
    }
  });

  it("claims an agent's unfinished runs through runs_recoverable_by_agent, never reading another agent's 25,000 queued ones", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      await state.migrate();
      await queuedRuns(schema, "gone-agent", 25_000);
      await queuedRuns(schema, "support", 30);
      await queuedRuns(schema, "support/researcher", 3);
      // An agent whose id starts like this one's is another agent: never claimed for it.
      await queuedRuns(schema, "support-eu", 5);
      await admin.query(`ANALYZE "${schema}".runs`);
      const claim = recoverableClaimStatement(`"${schema}"`, { owner: "support-host", ttlMs: 60_000, now: undefined, limit: 10, agentId: "support" }, null);
      // The plan for any agent (generic) and for this one's values (custom): both read only the agent's rows.
      for (const [mode, plan] of Object.entries(await executedPlans(admin, claim))) {
        expect(plan, `${mode}:\n${plan}`).not.toContain("Seq Scan");
        expect(plan, `${mode}:\n${plan}`).toContain("runs_recoverable_by_agent");
        // What the claim reads of the table: the agent's 33 runs at most, none of the other agents'.
        for (const scanned of plan.matchAll(/(?:Index|Bitmap Heap|Bitmap Index) Scan.*\(actual rows=(\d+)/g)) expect(Number(scanned[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(33);
        for (const removed of plan.matchAll(/Rows Removed by Filter: (\d+)/g)) expect(Number(removed[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(33);
      }
      const claimed = await state.claimRecoverableRuns({ owner: "support-host", ttlMs: 60_000, limit: 40, agentId: "support" });
      expect(claimed).toHaveLength(33);
      expect(claimed.every((run) => run.agentId === "support" || run.agentId === "support/researcher")).toBe(true);
      // Oldest first, across the agent and its subagents.
      expect(claimed.slice(28).map((run) => run.id)).toEqual(["run-support-29", "run-support-30", "run-support_researcher-1", "run-support_researcher-2", "run-support_researcher-3"]);
    } finally {
      await state.close();
    }
  });
});
