import { adapterDescriptor, defineGateway, definePlugin, isAssemblyLineError, type PluginDefinition, type PluginKernel } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, KERNEL_VERSION, createKernel, materializeGateway } from "@assemblyline-agents/runtime";
import { describe, expect, it } from "vitest";

const context = { agentDir: process.cwd(), env: {}, devMode: true };

/** A state plugin whose tap answers its own descriptors. */
const statePlugin = (name: string) =>
  definePlugin({
    name,
    version: "1.0.0",
    apply(kernel) {
      kernel.hooks.slot.for("state").tapPromise({ name }, async (descriptor) => (descriptor.plugin === name ? Object.assign(new InMemoryStateAdapter(), { madeBy: name }) : undefined));
    },
  });

async function applyFailure(plugins: PluginDefinition[]): Promise<unknown> {
  return createKernel({ plugins }).then(() => undefined, (error: unknown) => error);
}

describe("the kernel a plugin's apply(kernel) gets", () => {
  it("has the kernel's version and every hook's taps, and nothing of the plugins list", async () => {
    let seen: PluginKernel | undefined;
    await createKernel({ plugins: [definePlugin({ name: "looker", version: "1.0.0", apply: (kernel) => void (seen = kernel) })] });
    expect(seen?.version).toBe(KERNEL_VERSION);
    expect("plugins" in seen!).toBe(false);
    for (const hook of ["channel", "harness", "context", "tools", "resolveRun", "event"] as const) expect(typeof seen!.hooks[hook].tap, hook).toBe("function");
    expect(typeof seen!.hooks.slot.for("state").tapPromise).toBe("function");
  });

  it("applies every plugin the host listed, and keeps the host's list, when a plugin cuts that list while it is applied", async () => {
    const applied: string[] = [];
    const listed: PluginDefinition[] = [];
    const cutter = definePlugin({ name: "cutter", version: "1.0.0", apply: () => void (listed.length = 1, applied.push("cutter")) });
    const after = definePlugin({ name: "after", version: "1.0.0", apply: () => void applied.push("after") });
    listed.push(cutter, after);
    const kernel = await createKernel({ plugins: listed });
    expect(applied).toEqual(["cutter", "after"]);
    expect(kernel.plugins.map((plugin) => plugin.name)).toEqual(["cutter", "after"]);
    expect(Object.isFrozen(kernel.plugins)).toBe(true);
  });

  it("refuses an interceptor, naming the plugin, so no plugin answers another's slot descriptors past the slot guard", async () => {
    const hijacker = definePlugin({
      name: "hijacker",
      version: "3.1.0",
      apply(kernel) {
        // Would rewrite every later plugin's state tap to answer with its own adapter.
        (kernel.hooks.slot.for("state") as unknown as { intercept(interceptor: object): void }).intercept({
          register: (tap: { fn: Function }) => ({ ...tap, fn: async () => Object.assign(new InMemoryStateAdapter(), { madeBy: "hijacker" }) }),
        });
      },
    });
    const refusal = await applyFailure([hijacker, statePlugin("named")]);
    expect(isAssemblyLineError(refusal, "AL_ERR_PLUGIN_APPLY"), String(refusal)).toBe(true);
    expect((refusal as Error).message).toContain('plugin hijacker@3.1.0 reached for kernel.hooks.slot.for("state").intercept in apply(kernel); plugins only tap the kernel\'s hooks');
    // Without it, the named plugin fills its own slot.
    const live = await materializeGateway(await createKernel({ plugins: [statePlugin("named")] }), defineGateway({ state: adapterDescriptor("state", "named", {}) }), context);
    expect((live.state as { madeBy?: string }).madeBy).toBe("named");
  });

  it.each([
    ["calls a hook", (kernel: PluginKernel) => (kernel.hooks.harness as unknown as { promise(request: object): unknown }).promise({ runId: "r", modelSpec: "m" })],
    ["reads another plugin's taps", (kernel: PluginKernel) => (kernel.hooks.channel as unknown as { taps: unknown[] }).taps.length],
    ["intercepts the slot map", (kernel: PluginKernel) => (kernel.hooks.slot as unknown as { intercept(interceptor: object): void }).intercept({})],
  ])("refuses a plugin that %s, naming it", async (_label, reach) => {
    const refusal = await applyFailure([definePlugin({ name: "reacher", version: "1.0.0", apply: (kernel) => void reach(kernel) })]);
    expect(isAssemblyLineError(refusal, "AL_ERR_PLUGIN_APPLY"), String(refusal)).toBe(true);
    expect((refusal as Error).message).toMatch(/^AL_ERR_PLUGIN_APPLY: plugin reacher@1\.0\.0 reached for kernel\.hooks\./);
  });
});
