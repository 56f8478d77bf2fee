import { describe, expect, it } from "vitest";
import type { ScheduleRecord } from "@assemblyline-agents/core";
import { automationsAt } from "./support/automations-at.js";

const automation = (schedule: string) => `import { defineAutomation } from "@assemblyline-agents/core";
export default defineAutomation({ schedule: ${schedule}, message: "send the report" });
`;

function withoutAgent({ agentId: _agentId, lease: _lease, ...row }: ScheduleRecord): Omit<ScheduleRecord, "lease"> {
  return row;
}

describe("automation rows and their agent", () => {
  it("are written with the agent's id, static and dynamic, so a scheduler claiming by agent finds them", async () => {
    const { automations, bundle, state, clock } = await automationsAt({ "automations/tick.ts": automation(`{ every: 60000 }`) }, "2026-03-01T10:00:00.000Z");
    await automations.create({ name: "digest", schedule: { every: 60_000 }, message: "digest" });
    const agentId = bundle.manifest.agent.id;
    expect((await state.listSchedules()).map((row) => [row.id.split(":").slice(2).join(":"), row.agentId])).toEqual([
      ["dynamic:digest", agentId],
      ["static:tick", agentId],
    ]);
    clock.now = new Date("2026-03-01T10:05:00.000Z");
    expect(await state.claimDueSchedules({ owner: "other", ttlMs: 60_000, now: clock.now, agentId: "another-agent" })).toEqual([]);
    expect(await state.claimDueSchedules({ owner: "own", ttlMs: 60_000, now: clock.now, agentId })).toHaveLength(2);
  });

  it("written before rows had an agent, take the agent's id at a sync as they are then, their due time and pause kept; a leased row at the sync after its lease", async () => {
    const { automations, make, bundle, state, clock } = await automationsAt({ "automations/tick.ts": automation(`{ every: 60000 }`) }, "2026-03-01T10:00:00.000Z");
    await automations.create({ name: "digest", schedule: { every: 60_000 }, message: "digest" });
    await automations.setPaused("digest", true);
    clock.now = new Date("2026-03-01T10:01:00.000Z");
    const [leased] = await state.claimDueSchedules({ owner: "replica-1", ttlMs: 60_000, now: clock.now });
    const before = await state.listSchedules();
    // What an older version wrote: the same rows with no agent.
    for (const row of before) await state.upsertSchedule(withoutAgent(row));
    const foreign = { id: "automation:someone-else:static:tick", intervalMs: 60_000, nextRunAt: clock.now.toISOString(), payload: { kind: "automation" }, enabled: true };
    await state.upsertSchedule(foreign);
    expect((await state.listSchedules()).map((row) => row.agentId ?? null)).toEqual([null, null, null]);

    await make().syncStatic();
    const after = await state.listSchedules();
    expect(after.find((row) => row.id === foreign.id)?.agentId ?? null).toBeNull();
    const own = after.filter((row) => row.id !== foreign.id);
    const agentId = bundle.manifest.agent.id;
    // The leased row is left as it is: the dispatch under way moves it, and the next sync names it.
    expect(own).toEqual(before.map((row) => (row.id === leased?.id ? { ...withoutAgent(row), lease: row.lease } : { ...row, agentId })));
    expect((await automations.get("digest")).paused).toBe(true);

    // The dispatch moved the row on meanwhile; the next sync names its agent on the row as it is now.
    await state.completeScheduleRun(leased!.id, "replica-1", new Date("2026-03-01T10:02:00.000Z"));
    await make().syncStatic();
    expect(await state.getSchedule(leased!.id)).toEqual({ ...withoutAgent(leased!), agentId, nextRunAt: "2026-03-01T10:02:00.000Z", lease: null });
  });
});
