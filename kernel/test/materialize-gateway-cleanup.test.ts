import { describe, expect, it } from "vitest";
import { adapterDescriptor, defineGateway, definePlugin, isAssemblyLineError, type GatewaySlot } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, createKernel, materializeGateway } from "@assemblyline-agents/runtime";

const context = { agentDir: process.cwd(), env: {}, devMode: true };

/**
 * A plugin whose slot taps make adapters that record their close() in `closed`;
 * `fail` names the slot whose factory throws, `late` one whose factory settles
 * only after `lateMs`.
 */
function recordingPlugin(closed: string[], behaviour: { fail?: GatewaySlot; partial?: GatewaySlot; late?: GatewaySlot; lateMs?: number } = {}) {
  const adapters: Record<string, () => object> = {
    state: () => new InMemoryStateAdapter(),
    blob: () => ({ put: async () => undefined, get: async () => undefined, delete: async () => undefined, list: async () => [] }),
    sandbox: () => ({ acquire: async () => undefined, release: async () => undefined }),
  };
  return definePlugin({
    name: "recording",
    version: "1.0.0",
    apply(kernel) {
      for (const slot of ["state", "blob", "sandbox"] as const) {
        kernel.hooks.slot.for(slot).tapPromise("recording", async (descriptor) => {
          if (descriptor.plugin !== "recording") return undefined;
          if (behaviour.fail === slot) throw new Error(`${slot} endpoint unreachable`);
          if (behaviour.late === slot) await new Promise((done) => setTimeout(done, behaviour.lateMs ?? 0));
          const adapter = behaviour.partial === slot ? {} : adapters[slot]!();
          return Object.assign(adapter, { close: async () => void closed.push(slot) });
        });
      }
    },
  });
}

const gateway = defineGateway({
  state: adapterDescriptor("state", "recording", {}),
  blob: adapterDescriptor("blob", "recording", {}),
  sandbox: adapterDescriptor("sandbox", "recording", {}),
});

describe("materializeGateway when a slot fails", () => {
  it("closes the adapters it already opened, last opened first, and rethrows the slot's error", async () => {
    const closed: string[] = [];
    const kernel = await createKernel({ plugins: [recordingPlugin(closed, { fail: "sandbox" })] });
    await expect(materializeGateway(kernel, gateway, context)).rejects.toThrow(/sandbox endpoint unreachable/);
    expect(closed).toEqual(["blob", "state"]);
  });

  it("closes an adapter that fails its contract check with the ones before it", async () => {
    const closed: string[] = [];
    const kernel = await createKernel({ plugins: [recordingPlugin(closed, { partial: "blob" })] });
    const error = await materializeGateway(kernel, gateway, context).then(() => undefined, (caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_PLUGIN_CONTRACT"), String(error)).toBe(true);
    expect(closed).toEqual(["blob", "state"]);
  });

  it("keeps the slot's error when a close() fails too", async () => {
    const closed: string[] = [];
    const failingClose = definePlugin({
      name: "recording",
      version: "1.0.0",
      apply(kernel) {
        kernel.hooks.slot.for("state").tapPromise("recording", async () => Object.assign(new InMemoryStateAdapter(), { close: async () => { closed.push("state"); throw new Error("pool already gone"); } }));
        kernel.hooks.slot.for("blob").tapPromise("recording", async () => { throw new Error("blob endpoint unreachable"); });
      },
    });
    const kernel = await createKernel({ plugins: [failingClose] });
    await expect(materializeGateway(kernel, defineGateway({ state: gateway.state!, blob: gateway.blob! }), context)).rejects.toThrow(/blob endpoint unreachable/);
    expect(closed).toEqual(["state"]);
  });

  it("closes an adapter whose factory settles after its timeout, once it arrives", async () => {
    const closed: string[] = [];
    const kernel = await createKernel({ plugins: [recordingPlugin(closed, { late: "blob", lateMs: 150 })] });
    const error = await materializeGateway(kernel, gateway, context, { timeoutMs: 50 }).then(() => undefined, (caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_PLUGIN_TIMEOUT"), String(error)).toBe(true);
    expect(closed).toEqual(["state"]);
    await expect.poll(() => closed).toEqual(["state", "blob"]);
  });

  it("closes nothing when every slot materializes", async () => {
    const closed: string[] = [];
    const kernel = await createKernel({ plugins: [recordingPlugin(closed)] });
    const live = await materializeGateway(kernel, gateway, context);
    expect(Object.keys(live)).toEqual(["state", "blob", "sandbox"]);
    expect(closed).toEqual([]);
  });
});
