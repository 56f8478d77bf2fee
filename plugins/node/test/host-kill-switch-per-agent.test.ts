import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { StateAdapter } from "@assemblyline-agents/core";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { postgresSchemas } from "./support/postgres-schemas.js";
import { KILL_SWITCH_SETTING, killSwitchSetting } from "../src/index.js";
import { call, fixtureBundle, startHost, tempDir } from "./support/host.js";

/** Two agents whose hosts share one state store. Agent B's id starts with agent A's. */
const AGENT_A = "host-agent";
const AGENT_B = "host-agent-eu";

let bundleA: RuntimeBundle;
let bundleB: RuntimeBundle;
beforeAll(async () => {
  [bundleA, bundleB] = await Promise.all([fixtureBundle(), fixtureBundle(AGENT_B)]);
});

/** One PostgreSQL schema per test when the test database answers, all dropped after the file. */
const postgres = await postgresSchemas("kill switches of two agents on one PostgreSQL store", "al_kill_switch");

const stores: Record<string, () => Promise<StateAdapter>> = {
  "in-memory state": async () => new InMemoryStateAdapter(),
  "file state": async () => FileStateAdapter.open({ directory: tempDir("al-shared-state-") }),
  ...(postgres.available ? { "PostgreSQL state": async () => postgres.state() } : {}),
};

/**
 * The shared store: hosts' shutdowns leave it open; when the test ends, every host started on it
 * stops (a shutdown already under way is the same one) and then it closes.
 */
async function sharedStore(open: () => Promise<StateAdapter>) {
  const state = await open();
  const close = state.close!.bind(state);
  state.close = async () => undefined;
  const hosts: Array<Awaited<ReturnType<typeof startHost>>> = [];
  onTestFinished(async () => {
    await Promise.allSettled(hosts.map((host) => host.shutdown({ timeoutMs: 2_000 })));
    await close();
  });
  const start = async (bundle: RuntimeBundle) => {
    const host = await startHost(bundle, { state });
    hosts.push(host);
    return host;
  };
  return { state, start };
}

/** A turn on the fixture's raw `/message` channel route. */
const send = (url: string, message: string) => call(`${url}/message?wait=10`, { body: { message } });
const flip = (url: string, body: { engaged: boolean; reason: string; actor: string }) => call(`${url}/admin/kill-switch`, { body });
const trail = (audit: Array<{ key: string; actor: string; reason: string }>) => audit.map((event) => [event.key, event.actor, event.reason]);

describe.each(Object.entries(stores))("kill switches of two agents on one store (%s)", (_name, open) => {
  it("agent A's engaged switch refuses A's channel turns with 503 while B's host still accepts B's; each control API shows its own agent's position and history", async () => {
    const { start } = await sharedStore(open);
    const a = await start(bundleA);
    const b = await start(bundleB);

    const engaged = await flip(a.url, { engaged: true, reason: "A's provider incident", actor: "alice" });
    expect(engaged.body).toMatchObject({ engaged: true, key: killSwitchSetting(AGENT_A), auditEvent: { key: "ingress.killSwitch:host-agent", actor: "alice" } });
    const refused = await send(a.url, "echo: to A");
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe("AL_ERR_INGRESS_DISABLED");
    expect((await send(b.url, "echo: to B")).status).toBe(200);
    expect((await call(`${a.url}/readyz`)).body.ingressKillSwitch).toBe(true);
    expect((await call(`${b.url}/readyz`)).body.ingressKillSwitch).toBe(false);
    expect((await call(`${b.url}/admin/kill-switch`)).body).toEqual({ engaged: false, actor: null, reason: null, changedAt: null, key: "ingress.killSwitch:host-agent-eu", audit: [] });

    // B's operator engages B's switch, A's releases A's: each host follows its own.
    await flip(b.url, { engaged: true, reason: "B's maintenance", actor: "bea" });
    await flip(a.url, { engaged: false, reason: "resolved", actor: "alice" });
    expect((await send(a.url, "echo: to A again")).status).toBe(200);
    expect((await send(b.url, "echo: to B again")).status).toBe(503);
    const stateA = (await call(`${a.url}/admin/kill-switch`)).body;
    const stateB = (await call(`${b.url}/admin/kill-switch`)).body;
    expect(stateA).toMatchObject({ engaged: false, actor: "alice", reason: "resolved" });
    expect(trail(stateA.audit)).toEqual([
      ["ingress.killSwitch:host-agent", "alice", "resolved"],
      ["ingress.killSwitch:host-agent", "alice", "A's provider incident"],
    ]);
    expect(stateB).toMatchObject({ engaged: true, actor: "bea", reason: "B's maintenance" });
    expect(trail(stateB.audit)).toEqual([["ingress.killSwitch:host-agent-eu", "bea", "B's maintenance"]]);
    expect(a.logger.events("control.kill_switch_engaged")).toHaveLength(1);
    expect(b.logger.events("control.kill_switch_released")).toEqual([]);
  });

  it("a switch engaged under the store-wide key by an older version stays engaged for each agent until that agent's operator releases it", async () => {
    const { state, start } = await sharedStore(open);
    // What a host of an older version wrote when its operator engaged the switch.
    const before = { actor: "ops", reason: "incident before the upgrade" };
    await state.putSetting(KILL_SWITCH_SETTING, { engaged: true, ...before, changedAt: new Date().toISOString() }, before);
    const a = await start(bundleA);
    const b = await start(bundleB);

    for (const host of [a, b]) expect((await send(host.url, "echo: after the upgrade")).status).toBe(503);
    const legacy = (await call(`${a.url}/admin/kill-switch`)).body;
    expect(legacy).toMatchObject({ engaged: true, actor: "ops", reason: "incident before the upgrade", key: "ingress.killSwitch" });
    expect(trail(legacy.audit)).toEqual([["ingress.killSwitch", "ops", "incident before the upgrade"]]);

    // A's operator releases A's switch through the control API: A's own key decides from now on.
    expect((await flip(a.url, { engaged: false, reason: "A checked", actor: "alice" })).body).toMatchObject({ engaged: false, key: "ingress.killSwitch:host-agent" });
    expect((await send(a.url, "echo: A released")).status).toBe(200);
    expect((await send(b.url, "echo: B still held")).status).toBe(503);

    // A host of an older version engages the store-wide key again: B follows it, A's own key holds.
    const late = { actor: "old-replica", reason: "flipped by an old host" };
    await state.putSetting(KILL_SWITCH_SETTING, { engaged: true, ...late, changedAt: new Date().toISOString() }, late);
    const replicaA = await start(bundleA);
    expect((await send(replicaA.url, "echo: A's new replica")).status).toBe(200);
    const stateA = (await call(`${replicaA.url}/admin/kill-switch`)).body;
    expect(stateA).toMatchObject({ engaged: false, actor: "alice", key: "ingress.killSwitch:host-agent" });
    expect(trail(stateA.audit)).toEqual([
      ["ingress.killSwitch:host-agent", "alice", "A checked"],
      ["ingress.killSwitch", "ops", "incident before the upgrade"],
    ]);
    expect(trail((await call(`${b.url}/admin/kill-switch`)).body.audit)).toEqual([
      ["ingress.killSwitch", "old-replica", "flipped by an old host"],
      ["ingress.killSwitch", "ops", "incident before the upgrade"],
    ]);

    await flip(b.url, { engaged: false, reason: "B checked", actor: "bea" });
    expect((await send(b.url, "echo: B released")).status).toBe(200);
    expect(await state.getSetting(KILL_SWITCH_SETTING)).toMatchObject({ engaged: true, actor: "old-replica" });
  });
});
