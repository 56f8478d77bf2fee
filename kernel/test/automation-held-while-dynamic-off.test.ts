import { describe, expect, it } from "vitest";
import { noopLogger, type RuntimeLogger } from "@assemblyline-agents/core";
import { Automations, InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { agentFolder } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

function recordingLogger() {
  const warnings: Array<Record<string, unknown>> = [];
  return { logger: { ...noopLogger(), warn: (fields: Record<string, unknown>) => void warnings.push(fields) } as RuntimeLogger, warnings };
}

/** Automations of agent "poller" on one store and clock; `host(dynamic)` is a host whose agent.ts sets dynamicAutomations.dynamic so. */
function pollerStore(start: string) {
  const state = new InMemoryStateAdapter();
  const clock = { now: new Date(start) };
  const started: string[] = [];
  const host = (dynamic: boolean, logger: RuntimeLogger = noopLogger()) =>
    new Automations({
      store: state,
      agentId: "poller",
      statics: [],
      logger,
      now: () => clock.now,
      dynamic,
      submit: async (input) => {
        started.push(input.idempotencyKey);
        return { runId: `run_${started.length}`, created: true };
      },
    });
  /** Claim the due rows and dispatch them on `on`, moving each on as a scheduler does. */
  const dispatch = async (on: Automations) => {
    const runs = [];
    for (const row of await state.claimDueSchedules({ owner: "test", ttlMs: 60_000, now: clock.now, agentId: "poller" })) {
      const result = await on.dispatchDue(row);
      await state.completeScheduleRun(row.id, "test", result.nextRunAt, row.nextRunAt);
      runs.push(...result.runs);
    }
    return runs;
  };
  return { state, clock, started, host, dispatch };
}

describe("a run-created automation while agent.ts turns dynamicAutomations.dynamic off", () => {
  it("is kept and listed, starts no run when due, moves on to its next due time, and runs again once dynamic is on", async () => {
    const { state, clock, started, host, dispatch } = pollerStore("2026-03-02T08:00:00.000Z");
    await host(true).create({ name: "poll", schedule: { every: 60_000 }, message: "poll" });

    const { logger, warnings } = recordingLogger();
    const off = host(false, logger);
    await off.syncStatic();
    expect(warnings).toEqual([expect.objectContaining({ event: "automation.held", automations: ["poll"] })]);
    expect(await off.list()).toEqual([expect.objectContaining({ name: "poll", source: "dynamic", nextRunAt: "2026-03-02T08:01:00.000Z" })]);

    clock.now = new Date("2026-03-02T08:01:30.000Z");
    expect(await dispatch(off)).toEqual([]);
    // Moved on past now, so the next poll does not claim it again.
    expect((await state.getSchedule("automation:poller:dynamic:poll"))?.nextRunAt).toBe("2026-03-02T08:02:00.000Z");
    expect(await dispatch(off)).toEqual([]);
    clock.now = new Date("2026-03-02T08:02:10.000Z");
    expect(await dispatch(off)).toEqual([]);
    expect(started).toEqual([]);
    // Warned of once; the next skipped due times are logged at debug.
    expect(warnings.filter((fields) => fields.automation === "poll")).toEqual([
      { event: "automation.held", automation: "poll", dueAt: "2026-03-02T08:01:00.000Z", nextRunAt: "2026-03-02T08:02:00.000Z" },
    ]);
    expect(await off.list()).toEqual([expect.objectContaining({ name: "poll", nextRunAt: "2026-03-02T08:03:00.000Z" })]);

    clock.now = new Date("2026-03-02T08:03:05.000Z");
    expect((await dispatch(host(true))).map((run) => run.dueAt)).toEqual(["2026-03-02T08:03:00.000Z"]);
    expect(started).toHaveLength(1);
  });

  it("is held by a runtime built from an agent.ts without dynamicAutomations", async () => {
    const state = new InMemoryStateAdapter();
    const agent = (policy: string) => agentFolder({ "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "poller", model: "test/model"${policy} });\n` });
    const first = await startAgent(agent(`, dynamicAutomations: { dynamic: true }`), [], { state });
    await first.runtime.automations.create({ name: "poll", schedule: { every: 1000 }, message: "poll" });

    const { logger, warnings } = recordingLogger();
    const second = await startAgent(agent(""), [{ text: "polled" }], { state, logger });
    await second.runtime.automations.syncStatic();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const claimedAt = new Date();
    const [row] = await state.claimDueSchedules({ owner: "test", ttlMs: 10_000, now: claimedAt, limit: 10, agentId: "poller" });
    expect(row).toBeDefined();
    const dispatched = await second.runtime.automations.dispatchDue(row!);
    expect(dispatched.runs).toEqual([]);
    expect(dispatched.nextRunAt.getTime()).toBeGreaterThan(claimedAt.getTime());
    expect((await second.runtime.automations.list()).map((automation) => automation.name)).toEqual(["poll"]);
    expect(warnings.map((fields) => fields.event)).toEqual(["automation.held", "automation.held"]);
  });
});
