import { describe, expect, it } from "vitest";
import { noopLogger } from "@assemblyline-agents/core";
import { Automations, InMemoryStateAdapter, normalizeSchedule } from "@assemblyline-agents/runtime";

/** Automations of agent "poller" on one store: a static `nightly` from automations/, and `host(dynamic)` as agent.ts sets dynamicAutomations.dynamic. */
function pollerStore() {
  const state = new InMemoryStateAdapter();
  const now = new Date("2026-03-02T08:00:00.000Z");
  const nightly = { name: "nightly", source: { file: "automations/nightly.ts", hash: "h" }, schedule: normalizeSchedule("0 9 * * *", "nightly"), message: "report", conversationId: null, enabled: true };
  const host = (dynamic: boolean) =>
    new Automations({ store: state, agentId: "poller", statics: [nightly], logger: noopLogger(), now: () => now, dynamic, submit: async () => ({ runId: "run_1", created: true }) });
  return { host };
}

describe("listing automations while agent.ts turns dynamicAutomations.dynamic off", () => {
  it("marks each run-created automation held, with the due time its schedule gives, and a static one not held", async () => {
    const { host } = pollerStore();
    await host(true).create({ name: "poll", schedule: { every: 60_000 }, message: "poll" });
    const off = host(false);
    await off.syncStatic();

    expect(await off.list()).toEqual([
      expect.objectContaining({ name: "nightly", source: "static", held: false, nextRunAt: "2026-03-02T09:00:00.000Z" }),
      expect.objectContaining({ name: "poll", source: "dynamic", held: true, nextRunAt: "2026-03-02T08:01:00.000Z" }),
    ]);
    expect(await off.get("poll")).toMatchObject({ held: true });
    // Resuming it does not make it run: the answer says it is still held.
    expect(await off.setPaused("poll", true)).toMatchObject({ paused: true, held: true });
    expect(await off.setPaused("poll", false)).toMatchObject({ paused: false, held: true });
  });

  it("marks nothing held while dynamic is on", async () => {
    const { host } = pollerStore();
    const on = host(true);
    await on.create({ name: "poll", schedule: { every: 60_000 }, message: "poll" });
    await on.syncStatic();
    expect((await on.list()).map(({ name, held }) => ({ name, held }))).toEqual([
      { name: "nightly", held: false },
      { name: "poll", held: false },
    ]);
  });

  it("lists a file no host has stored yet as not held", async () => {
    const { host } = pollerStore();
    expect(await host(false).notYetStored()).toEqual([expect.objectContaining({ name: "nightly", held: false })]);
  });
});
