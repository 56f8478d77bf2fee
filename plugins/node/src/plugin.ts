import { readFileSync } from "node:fs";
import { AssemblyLineError, adapterDescriptor, definePlugin, optionsSchemaCheck, type AdapterDescriptor } from "@assemblyline-agents/core";

export const NODE_PLUGIN_ID = "node";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/**
 * What `runtime: adapter("node")` / `nodeRuntime()` asks of the host: where
 * `assembly-line dev` and `start` listen when neither --port/--host (or the
 * project config's host) nor PORT/HOST says. config.schema.json says the same.
 */
export interface NodeRuntimeSlotOptions {
  /** TCP port, 0-65535; 0 picks a free one. */
  port?: number;
  /** Interface to bind, e.g. "127.0.0.1" or "0.0.0.0". */
  host?: string;
}

/** `runtime: nodeRuntime()` in gateway.ts: serve the agent with the Node host (`assembly-line start`). */
export function nodeRuntime(options: NodeRuntimeSlotOptions = {}): AdapterDescriptor<"runtime", NodeRuntimeSlotOptions> {
  return adapterDescriptor("runtime", NODE_PLUGIN_ID, checkNodeRuntimeOptions(options));
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
      descriptor.plugin === NODE_PLUGIN_ID ? { name: NODE_PLUGIN_ID, options: checkNodeRuntimeOptions(descriptor.options) } : undefined,
    );
  },
});

const refuseBadOptions = optionsSchemaCheck(new URL("../config.schema.json", import.meta.url), {
  helper: "nodeRuntime() in gateway.ts (the runtime slot)",
  code: "AL_ERR_PLUGIN_OPTIONS",
  fix: (names) => `nodeRuntime() takes ${names.join(" and ")} (port an integer 0-65535, host a non-empty string); remove or correct the option the message names.`,
});

/** The runtime slot's options, checked against config.schema.json here as well as by the registry: a kernel can be composed without the registry. */
function checkNodeRuntimeOptions(options: unknown): NodeRuntimeSlotOptions {
  if (options === undefined) return {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new AssemblyLineError("AL_ERR_PLUGIN_OPTIONS", "nodeRuntime() in gateway.ts (the runtime slot): the options are not an object", { fix: "Pass { port?, host? } or nothing." });
  }
  refuseBadOptions(options);
  return options as NodeRuntimeSlotOptions;
}
