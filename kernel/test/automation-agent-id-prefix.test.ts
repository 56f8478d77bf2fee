import { describe, expect, it } from "vitest";
import { noopLogger, type ScheduleRecord } from "@assemblyline-agents/core";
import { Automations, InMemoryStateAdapter, type AutomationManifestEntry } from "@assemblyline-agents/runtime";

const file = (name: string): AutomationManifestEntry => ({
  name,
  source: { file: `automations/${name}.ts`, hash: name },
  schedule: { kind: "every", everyMs: 60_000 },
  message: `run ${name}`,
  conversationId: null,
  enabled: true,
});

/** Agents `ops:eu` and `ops` on one store, each with its own automations/ files. */
function twoAgents() {
  const state = new InMemoryStateAdapter();
  const now = () => new Date("2026-03-01T10:00:00.000Z");
  const agent = (agentId: string, statics: AutomationManifestEntry[]) =>
    new Automations({ store: state, agentId, statics, logger: noopLogger(), now, submit: async () => ({ runId: "run_1", created: true }) });
  return { state, eu: agent("ops:eu", [file("eu_report")]), ops: agent("ops", [file("daily")]) };
}

function withoutAgent({ agentId: _agentId, lease: _lease, ...row }: ScheduleRecord): Omit<ScheduleRecord, "lease"> {
  return row;
}

describe("an agent whose id another agent's id begins with (ops beside ops:eu)", () => {
  it("neither lists nor deletes the other agent's automations at its sync, and cannot change them", async () => {
    const { state, eu, ops } = twoAgents();
    await eu.syncStatic();
    await eu.create({ name: "eu_digest", schedule: { every: 60_000 }, message: "digest" });
    await ops.syncStatic();

    expect((await ops.list()).map((automation) => automation.name)).toEqual(["daily"]);
    expect((await eu.list()).map((automation) => automation.name)).toEqual(["eu_digest", "eu_report"]);
    expect(await state.getSchedule("automation:ops:eu:static:eu_report")).toBeDefined();
    await expect(ops.delete("eu_digest")).resolves.toEqual({ deleted: false });
    await expect(ops.update("eu_digest", { message: "taken over" })).rejects.toMatchObject({ code: "AL_ERR_AUTOMATION_NOT_FOUND" });
    expect((await ops.notYetStored()).map((automation) => automation.name)).toEqual([]);
    // The name is ops's own to take: ops:eu's automation of that name is not ops's.
    await expect(ops.create({ name: "eu_digest", schedule: { every: 60_000 }, message: "ops digest" })).resolves.toMatchObject({ name: "eu_digest" });
    expect((await eu.get("eu_digest")).message).toBe("digest");
  });

  it("leaves the other agent's rows written before rows had an agent to that agent, never naming them its own", async () => {
    const { state, eu, ops } = twoAgents();
    await eu.syncStatic();
    await eu.create({ name: "eu_digest", schedule: { every: 60_000 }, message: "digest" });
    // What an older version wrote: the same rows with no agent.
    for (const row of await state.listSchedules()) await state.upsertSchedule(withoutAgent(row));

    await ops.syncStatic();
    const euRows = (await state.listSchedules()).filter((row) => row.id.startsWith("automation:ops:eu:"));
    expect(euRows.map((row) => [row.id, row.agentId ?? null])).toEqual([
      ["automation:ops:eu:dynamic:eu_digest", null],
      ["automation:ops:eu:static:eu_report", null],
    ]);

    await eu.syncStatic();
    expect((await state.listSchedules()).map((row) => [row.id, row.agentId])).toEqual([
      ["automation:ops:eu:dynamic:eu_digest", "ops:eu"],
      ["automation:ops:eu:static:eu_report", "ops:eu"],
      ["automation:ops:static:daily", "ops"],
    ]);
  });
});
