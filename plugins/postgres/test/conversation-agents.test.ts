import type { ConversationMessage } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { listStatement } from "../src/facets/conversations.js";
import { probeDatabase } from "./support/database.js";
import { migratedUpTo, scratchSchemas } from "./support/scratch-schemas.js";

const probe = await probeDatabase("PostgreSQL conversation messages by agent");

const message = (content: string): ConversationMessage => ({ role: "user", content, runId: null, createdAt: "2026-01-01T00:00:00.000Z" });

describe.skipIf(!probe.available)("PostgreSQL conversation messages by agent", () => {
  const { admin, newSchema } = scratchSchemas("al_conv_agents");

  it("gives the messages a store held before agents the agent of their run when it migrates; those it cannot attribute stay every agent's", async () => {
    const schema = newSchema();
    const applied = await migratedUpTo(admin, schema, "conversation messages by agent");
    for (const [id, agentId] of [["r-support", "support"], ["r-sub", "support/researcher"], ["r-sales", "sales"]]) {
      await admin.query(`INSERT INTO "${schema}".runs (id, agent_id, agent_revision, status, model_spec, input) VALUES ($1, $2, 'rev', 'completed', 'm', '{}')`, [id, agentId]);
    }
    // In order: a run of each agent, no run, a run that is gone.
    for (const [content, runId] of [["support's", "r-support"], ["researcher's", "r-sub"], ["sales'", "r-sales"], ["no run", null], ["gone run", "r-gone"]]) {
      await admin.query(`INSERT INTO "${schema}".conversation_messages (conversation_id, role, content, run_id, created_at) VALUES ('shared', 'user', $1, $2, 't')`, [content, runId]);
    }
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      expect((await state.migrate()).applied).toEqual(applied);
      const of = async (agentId?: string) => (await state.listConversationMessages("shared", agentId ? { agentId } : {})).map((m) => [m.content, m.agentId]);
      expect(await of("support")).toEqual([["support's", "support"], ["no run", null], ["gone run", null]]);
      expect(await of("support/researcher")).toEqual([["researcher's", "support/researcher"], ["no run", null], ["gone run", null]]);
      expect(await of("sales")).toEqual([["sales'", "sales"], ["no run", null], ["gone run", null]]);
      expect(await of()).toEqual([["support's", "support"], ["researcher's", "support/researcher"], ["sales'", "sales"], ["no run", null], ["gone run", null]]);
    } finally {
      await state.close();
    }
  });

  it("lists an agent's last messages through conversation_messages_by_agent, never reading the other agents' rows", async () => {
    const schema = newSchema();
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      const many = (count: number, label: string) => Array.from({ length: count }, (_, i) => message(`${label}${i}`));
      await state.appendConversationMessages("shared", many(500, "legacy"));
      await state.appendConversationMessages("shared", many(100, "support"), { agentId: "support" });
      await state.appendConversationMessages("shared", many(20_000, "sales"), { agentId: "sales" });
      for (let conversation = 0; conversation < 50; conversation += 1) await state.appendConversationMessages(`other-${conversation}`, many(100, "x"), { agentId: "support" });
      await admin.query(`ANALYZE "${schema}".conversation_messages`);
      const client = await admin.connect();
      try {
        await client.query(`PREPARE listing (text, bigint, text) AS ${listStatement(`"${schema}"`, true)}`);
        // The plan for any agent (generic) and for this one's values (custom): both walk the index.
        for (const mode of ["force_generic_plan", "force_custom_plan"]) {
          await client.query(`SET plan_cache_mode = ${mode}`);
          const { rows } = await client.query<{ "QUERY PLAN": string }>("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE listing ('shared', 20, 'support')");
          const plan = rows.map((row) => row["QUERY PLAN"]).join("\n");
          expect(plan, mode).not.toContain("Seq Scan");
          expect(plan.match(/using conversation_messages_by_agent/g), `${mode}:\n${plan}`).toHaveLength(2);
          expect(plan, mode).toMatch(/Index Cond: \(\(conversation_id = (\$1|'shared'::text)\) AND \(agent_id >= (\$3|'support'::text)\) AND \(agent_id <= (\$3|'support'::text)\)\)/);
          expect(plan, mode).toMatch(/Index Cond: \(\(conversation_id = (\$1|'shared'::text)\) AND \(agent_id IS NULL\)\)/);
          // Each range stops at the limit: no sales row, and no legacy row past the last 20, is read.
          for (const scanned of plan.matchAll(/Index Scan.*\(actual rows=(\d+)/g)) expect(Number(scanned[1]), `${mode}:\n${plan}`).toBeLessThanOrEqual(20);
        }
      } finally {
        client.release();
      }
      expect((await state.listConversationMessages("shared", { agentId: "support", limit: 3 })).map((m) => m.content)).toEqual(["support97", "support98", "support99"]);
    } finally {
      await state.close();
    }
  });
});
