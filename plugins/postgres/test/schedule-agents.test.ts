import { describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { probeDatabase } from "./support/database.js";
import { migratedUpTo, scratchSchemas } from "./support/scratch-schemas.js";

const probe = await probeDatabase("PostgreSQL schedules by agent");

describe.skipIf(!probe.available)("PostgreSQL schedules by agent", () => {
  const { admin, newSchema } = scratchSchemas("al_sched_agents");

  it("gives the automation rows a store held before agents the agent their payload names when it migrates; other rows stay every agent's", async () => {
    const schema = newSchema();
    const applied = await migratedUpTo(admin, schema, "schedules by agent");
    const rows: Array<[string, unknown]> = [
      ["automation:support:static:tick", { kind: "automation", agentId: "support", name: "tick" }],
      ["automation:sales:dynamic:digest", { kind: "automation", agentId: "sales", name: "digest" }],
      ["host-report", { message: "send the report" }],
      ["odd-agent", { kind: "automation", agentId: 7 }],
      ["not-an-object", ["automation"]],
      ["no-payload", null],
    ];
    for (const [id, payload] of rows) {
      await admin.query(`INSERT INTO "${schema}".schedules (id, interval_ms, next_run_at, payload, enabled) VALUES ($1, 60000, '2026-01-01T00:00:00Z', $2::json, true)`, [id, JSON.stringify(payload)]);
    }
    const state = new PostgresStateAdapter({ pool: admin, schema });
    try {
      expect((await state.migrate()).applied).toEqual(applied);
      const agentOf = async (id: string) => (await state.getSchedule(id))?.agentId ?? null;
      expect(await agentOf("automation:support:static:tick")).toBe("support");
      expect(await agentOf("automation:sales:dynamic:digest")).toBe("sales");
      for (const id of ["host-report", "odd-agent", "not-an-object", "no-payload"]) expect(await agentOf(id), id).toBeNull();
      const claimed = await state.claimDueSchedules({ owner: "support-host", ttlMs: 60_000, agentId: "support" });
      expect(claimed.map((row) => row.id).sort()).toEqual(["automation:support:static:tick", "host-report", "no-payload", "not-an-object", "odd-agent"]);
    } finally {
      await state.close();
    }
  });

  it("refuses a schedule whose agentId is not a non-empty string, naming the field, and keeps the row it had", async () => {
    const state = new PostgresStateAdapter({ pool: admin, schema: newSchema() });
    try {
      const row = { id: "job", agentId: "support", intervalMs: 60_000, nextRunAt: "2026-01-01T00:00:00.000Z", payload: {}, enabled: true };
      await state.upsertSchedule(row);
      for (const agentId of ["", 7]) {
        await expect(state.upsertSchedule({ ...row, agentId: agentId as string })).rejects.toThrow(/schedule\.agentId must be a non-empty string/);
      }
      expect(await state.getSchedule("job")).toEqual({ ...row, lease: null });
    } finally {
      await state.close();
    }
  });
});
