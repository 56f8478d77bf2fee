import { describe, expect, it } from "vitest";
import { adapterDescriptor, defineGateway, definePlugin, isAssemblyLineError } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, createKernel, materializeGateway } from "@assemblyline-agents/runtime";

/** A state plugin whose tap answers its own descriptors, or (greedy) every one. */
const statePlugin = (name: string, greedy: boolean) =>
  definePlugin({
    name,
    version: "1.0.0",
    apply(kernel) {
      kernel.hooks.slot.for("state").tapPromise({ name }, async (descriptor) => (greedy || descriptor.plugin === name ? Object.assign(new InMemoryStateAdapter(), { madeBy: name }) : undefined));
    },
  });

const context = { agentDir: process.cwd(), env: {}, devMode: true };

describe("a plugin's slot taps", () => {
  it("fill the slot a descriptor names with that plugin's adapter", async () => {
    const kernel = await createKernel({ plugins: [statePlugin("first", false), statePlugin("named", false)] });
    const live = await materializeGateway(kernel, defineGateway({ state: adapterDescriptor("state", "named", {}) }), context);
    expect((live.state as { madeBy?: string }).madeBy).toBe("named");
  });

  it("are refused when one answers another plugin's descriptor, instead of filling that plugin's slot", async () => {
    const kernel = await createKernel({ plugins: [statePlugin("greedy", true), statePlugin("named", false)] });
    const refusal = await materializeGateway(kernel, defineGateway({ state: adapterDescriptor("state", "named", {}) }), context).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isAssemblyLineError(refusal, "AL_ERR_PLUGIN_CONTRACT"), String(refusal)).toBe(true);
    expect(String((refusal as Error).message)).toContain("plugin greedy answered the state descriptor of plugin named");
    // Its own descriptor it may still fill.
    const own = await materializeGateway(kernel, defineGateway({ state: adapterDescriptor("state", "greedy", {}) }), context);
    expect((own.state as { madeBy?: string }).madeBy).toBe("greedy");
  });

  it("are refused when made with tap() and an async function, naming the plugin and pointing at tapPromise, instead of reading its promise as an adapter", async () => {
    const early = definePlugin({
      name: "early",
      version: "2.0.0",
      apply(kernel) {
        // @ts-expect-error an async slot tap belongs in tapPromise: tap() reads the promise as the answer
        kernel.hooks.slot.for("state").tap({ name: "early" }, async (descriptor) => (descriptor.plugin === "early" ? new InMemoryStateAdapter() : undefined));
      },
    });
    const kernel = await createKernel({ plugins: [early, statePlugin("named", false)] });
    const refusal = await materializeGateway(kernel, defineGateway({ state: adapterDescriptor("state", "named", {}) }), context).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isAssemblyLineError(refusal, "AL_ERR_PLUGIN_CONTRACT"), String(refusal)).toBe(true);
    expect(String((refusal as Error).message)).toContain(`plugin early@2.0.0's state slot tap "early" was made with tap() and returned a promise; use tapPromise for an async slot tap`);
  });

  it("made with tap() and a synchronous function answer as before", async () => {
    const sync = definePlugin({
      name: "sync",
      version: "1.0.0",
      apply(kernel) {
        kernel.hooks.slot.for("state").tap({ name: "sync" }, (descriptor) => (descriptor.plugin === "sync" ? Object.assign(new InMemoryStateAdapter(), { madeBy: "sync" }) : undefined));
      },
    });
    const kernel = await createKernel({ plugins: [sync, statePlugin("named", false)] });
    const live = await materializeGateway(kernel, defineGateway({ state: adapterDescriptor("state", "named", {}) }), context);
    expect((live.state as { madeBy?: string }).madeBy).toBe("named");
    const own = await materializeGateway(kernel, defineGateway({ state: adapterDescriptor("state", "sync", {}) }), context);
    expect((own.state as { madeBy?: string }).madeBy).toBe("sync");
  });
});
