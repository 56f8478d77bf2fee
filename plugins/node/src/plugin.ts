import { readFileSync } from "node:fs";
import { adapterDescriptor, definePlugin, type AdapterDescriptor } from "@assemblyline-agents/core";

export const NODE_PLUGIN_ID = "node";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** What `runtime: adapter("node")` / `nodeRuntime()` asks of the host. */
export interface NodeRuntimeSlotOptions {
  port?: number;
  host?: string;
}

/** `runtime: nodeRuntime()` in gateway.ts: serve the agent with the Node host (`assembly-line start`). */
export function nodeRuntime(options: NodeRuntimeSlotOptions = {}): AdapterDescriptor<"runtime", NodeRuntimeSlotOptions> {
  return adapterDescriptor("runtime", NODE_PLUGIN_ID, options);
}

/**
 * The Node host as a kernel plugin. The runtime slot has no methods to call:
 * it records that this host serves the agent, with its listen options.
 */
export const plugin = definePlugin({
  name: NODE_PLUGIN_ID,
  version: PACKAGE_VERSION,
  apply(kernel) {
    kernel.hooks.slot.for("runtime").tapPromise({ name: NODE_PLUGIN_ID }, async (descriptor) =>
      descriptor.plugin === NODE_PLUGIN_ID ? { name: NODE_PLUGIN_ID, options: descriptor.options as NodeRuntimeSlotOptions } : undefined,
    );
  },
});
