import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { STORE_AGENTS_SETTING, noteAgentOnStore } from "../src/host/shared-store.js";
import { captureLogger, fixtureBundle, startHost } from "./support/host.js";

const AGENT_A = "host-agent";
const AGENT_B = "host-agent-eu";
const DAY = 24 * 60 * 60 * 1000;

let bundleA: RuntimeBundle;
let bundleB: RuntimeBundle;
beforeAll(async () => {
  [bundleA, bundleB] = await Promise.all([fixtureBundle(), fixtureBundle(AGENT_B)]);
});

describe("a host on a state store another agent uses", () => {
  it("warns at boot naming the other agent and the facets they share; an agent alone on its store does not", async () => {
    const state = new InMemoryStateAdapter();
    const close = state.close.bind(state);
    state.close = async () => undefined;
    onTestFinished(close);
    const a = await startHost(bundleA, { state });
    expect(a.logger.events("state.shared_store")).toEqual([]);
    await a.shutdown({ timeoutMs: 2_000 });

    const b = await startHost(bundleB, { state });
    expect(b.logger.events("state.shared_store").map((entry) => entry.fields)).toEqual([
      { event: "state.shared_store", agentId: AGENT_B, otherAgents: [AGENT_A], sharedFacets: ["memory", "files"] },
    ]);
    expect(b.logger.events("state.shared_store")[0]!.msg).toMatch(/\/memory and \/files are one for all of them; give each agent its own store/);
    await b.shutdown({ timeoutMs: 2_000 });

    const again = await startHost(bundleA, { state });
    expect(again.logger.events("state.shared_store").map((entry) => entry.fields.otherAgents)).toEqual([[AGENT_B]]);
  });
});

describe("noteAgentOnStore", () => {
  it("counts agents that started within 30 days, drops older ones from the note, and rewrites its own entry at most once a day", async () => {
    const state = new InMemoryStateAdapter();
    const start = new Date("2026-06-01T00:00:00.000Z");
    const at = (days: number) => new Date(start.getTime() + days * DAY);
    const logger = captureLogger();
    expect(await noteAgentOnStore(state, "old-agent", logger, at(0))).toEqual([]);
    expect(await noteAgentOnStore(state, "support", logger, at(10))).toEqual(["old-agent"]);
    const writes = async () => (await state.listSettingAudit({ key: STORE_AGENTS_SETTING })).length;
    expect(await writes()).toBe(2);
    // Restarts within the day write nothing.
    expect(await noteAgentOnStore(state, "support", logger, at(10.5))).toEqual(["old-agent"]);
    expect(await writes()).toBe(2);
    // 31 days after old-agent's last start it no longer counts, and the next write drops it.
    expect(await noteAgentOnStore(state, "support", logger, at(31))).toEqual([]);
    expect(await state.getSetting(STORE_AGENTS_SETTING)).toEqual({ support: at(31).toISOString() });
    expect(logger.events("state.shared_store").map((entry) => entry.fields.otherAgents)).toEqual([["old-agent"], ["old-agent"]]);
  });

  it("starts a new note over a value that is not one, and never blocks boot when the settings fail", async () => {
    const state = new InMemoryStateAdapter();
    await state.putSetting(STORE_AGENTS_SETTING, { support: "not a time", other: 7, [AGENT_B]: ["x"] }, { actor: "test" });
    expect(await noteAgentOnStore(state, AGENT_A, captureLogger())).toEqual([]);
    expect(Object.keys((await state.getSetting(STORE_AGENTS_SETTING)) as object)).toEqual([AGENT_A]);

    const logger = captureLogger();
    const failing = Object.assign(Object.create(state) as InMemoryStateAdapter, { getSetting: async () => Promise.reject(new Error("settings down")) });
    expect(await noteAgentOnStore(failing, AGENT_A, logger)).toEqual([]);
    expect(logger.events("state.shared_store_check_failed").map((entry) => entry.fields.err)).toEqual(["Error: settings down"]);
  });
});
