import { beforeAll, describe, expect, it } from "vitest";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { killSwitchSetting } from "../src/index.js";
import { call, fixtureBundle, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

/** In-memory state whose kill-switch reads fail while `failing` is set, as a settings store in an outage does. */
function stateWithUnreadableSwitch(): { state: InMemoryStateAdapter; control: { failing: boolean } } {
  const state = new InMemoryStateAdapter();
  const control = { failing: false };
  const getSetting = state.getSetting.bind(state);
  state.getSetting = async (key) => {
    if (control.failing && key.startsWith("ingress.killSwitch")) throw Object.assign(new Error("connection reset by 10.0.0.7:5432"), { code: "ECONNRESET" });
    return getSetting(key);
  };
  return { state, control };
}

describe("an ingress kill switch the host cannot read", () => {
  it("refuses new turns with 503 and Retry-After until it was read once, and then honours the position it read", async () => {
    const { state, control } = stateWithUnreadableSwitch();
    await state.putSetting(killSwitchSetting("host-agent"), { engaged: true, actor: "oncall", reason: "provider incident", changedAt: new Date().toISOString() }, { actor: "oncall" });
    control.failing = true;
    const host = await startHost(bundle, { state });

    const refused = await call(`${host.url}/message`, { body: { message: "echo: hi" } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(refused.body.error).toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE", message: expect.stringContaining("kill switch") });
    // The store's address stays in the log.
    expect(JSON.stringify(refused.body)).not.toContain("10.0.0.7");
    expect(host.logger.events("kill_switch.read_failed")[0]?.fields).toMatchObject({ known: false, err: expect.stringContaining("connection reset") });
    // Not ready either: a balancer keeps traffic away while the position is unknown.
    expect((await call(`${host.url}/readyz`)).status).toBe(503);
    expect((await state.listRuns({ limit: 10 })).runs).toEqual([]);

    control.failing = false;
    const stillEngaged = await call(`${host.url}/message`, { body: { message: "echo: hi" } });
    expect(stillEngaged.status).toBe(503);
    expect(stillEngaged.body.error.code).toBe("AL_ERR_INGRESS_DISABLED");
    expect((await state.listRuns({ limit: 10 })).runs).toEqual([]);
  });

  it("keeps the last position it read through a later outage", async () => {
    const { state, control } = stateWithUnreadableSwitch();
    const host = await startHost(bundle, { state });
    expect((await call(`${host.url}/readyz`)).body.ingressKillSwitch).toBe(false);
    control.failing = true;
    // /readyz reads the switch whenever its last read is no longer fresh: wait until one of those reads failed.
    await waitFor(async () => {
      const ready = await call(`${host.url}/readyz`);
      expect(ready.status).toBe(200);
      return host.logger.events("kill_switch.read_failed").length > 0 || undefined;
    }, 10_000, "a failed read of the kill switch");
    expect(host.logger.events("kill_switch.read_failed")[0]?.fields).toMatchObject({ known: true });
    const accepted = await call(`${host.url}/message`, { body: { message: "echo: hi" } });
    expect(accepted.status).toBe(202);
  });
});
