import { describe, expect, it, onTestFinished } from "vitest";
import type { RuntimeLogger, ScheduleDispatch, ScheduleRecord, StateAdapter } from "@assemblyline-agents/core";
import { LocalScheduler } from "@assemblyline-agents/local";
import { listenNodeRuntime, type NodeRuntimeOptions } from "@assemblyline-agents/node";
import { InMemoryStateAdapter, scriptedHarness, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { twoAgentsOnOneStore } from "./support/two-agents-one-store.js";

/**
 * Two agents' Node hosts on one state store, each with its own LocalScheduler (as two agents on
 * one database are). Agent B's id starts with agent A's, without the "/" of a subagent.
 */
const AGENT_A = "scheduled-agent";
const AGENT_B = "scheduled-agent-eu";

const { agents, stores, sharedStore } = await twoAgentsOnOneStore("schedules in a shared store", "al_shared_schedules", [AGENT_A, AGENT_B]);

/** A logger that keeps the fields of every warning. */
function warningsLogger(): RuntimeLogger & { warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  return { warnings, debug: () => undefined, info: () => undefined, error: () => undefined, warn: (fields) => void warnings.push(fields) };
}

async function hostOf(bundle: RuntimeBundle, state: StateAdapter, scheduler: NodeRuntimeOptions["scheduler"], logger = warningsLogger()) {
  const host = await listenNodeRuntime({
    ...bundle,
    state,
    agentHarness: scriptedHarness({ turns: [{ text: `answered by ${bundle.manifest.agent.id}` }] }),
    port: 0,
    host: "127.0.0.1",
    devMode: true,
    logger,
    ...(scheduler ? { scheduler } : {}),
  });
  onTestFinished(() => host.shutdown({ timeoutMs: 2_000 }));
  return Object.assign(host, { logger });
}

/** A schedule row of a host's own, written with the agent that runs it and a message. */
function hostSchedule(id: string, agentId: string, conversationId: string): Omit<ScheduleRecord, "lease"> {
  return { id, agentId, intervalMs: 3_600_000, nextRunAt: new Date(Date.now() - 1_000).toISOString(), payload: { message: `run ${id}`, conversationId }, enabled: true };
}

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(Object.entries(stores))("schedules in a store shared with another agent (%s)", (_name, open) => {
  it("each agent's host starts its own schedules' runs, as its own agent, without waiting out a lease the other took", async () => {
    const state = await sharedStore(open);
    // A's host alone first, polling often: it must leave B's row as it finds it.
    const a = await hostOf(agents.a, state, new LocalScheduler({ store: state, pollIntervalMs: 20 }));
    await state.upsertSchedule(hostSchedule("b-report", AGENT_B, "conv-b"));
    await state.upsertSchedule(hostSchedule("a-report", AGENT_A, "conv-a"));
    const runOf = async (conversationId: string) => (await state.listRuns({ conversationId })).runs.find((run) => run.status === "completed");
    const ofA = await waitFor(() => runOf("conv-a"), "A's schedule to run");
    expect(ofA).toMatchObject({ agentId: AGENT_A, input: { message: "run a-report" } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await state.listRuns({ conversationId: "conv-b" })).runs).toEqual([]);
    expect((await state.getSchedule("b-report"))?.lease).toBeNull();

    // B's host comes up: its row is free, not held for A's scheduler's lease (60 s by default).
    await hostOf(agents.b, state, new LocalScheduler({ store: state, pollIntervalMs: 20 }));
    const ofB = await waitFor(() => runOf("conv-b"), "B's schedule to run", 5_000);
    expect(ofB).toMatchObject({ agentId: AGENT_B, input: { message: "run b-report" } });
    expect((await state.listRuns({ conversationId: "conv-a" })).runs).toHaveLength(1);
    expect(a.logger.warnings.filter((fields) => String(fields.event).includes("filter_ignored"))).toEqual([]);
  });
});

describe("a host whose scheduler ignores the agent it was started with", () => {
  it("starts no run for another agent's schedule, refuses the dispatch so the row's lease runs out for its own host, and warns", async () => {
    const state = new InMemoryStateAdapter();
    let dispatch: ScheduleDispatch | undefined;
    let startedWith: unknown;
    const host = await hostOf(agents.a, state, {
      start: async (fn, options) => {
        dispatch = fn;
        startedWith = options;
      },
      stop: async () => undefined,
    });
    expect(startedWith).toMatchObject({ agentId: AGENT_A, automationCatchUpMs: 180_000, logger: expect.anything() });
    await state.upsertSchedule(hostSchedule("b-report", AGENT_B, "conv-b"));
    const row = (await state.getSchedule("b-report"))!;
    await expect(dispatch!("b-report", row)).rejects.toMatchObject({ code: "AL_ERR_AUTOMATION_NOT_FOUND" });
    expect((await state.listRuns({})).runs).toEqual([]);
    expect(host.logger.warnings).toContainEqual(expect.objectContaining({ event: "scheduler.agent_filter_ignored", scheduleId: "b-report", agentId: AGENT_B }));
  });
});
