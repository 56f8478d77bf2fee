// @ts-check
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { adapterDescriptor, definePlugin } from "@assemblyline-agents/core";
import { JsonFileState } from "./json-file-state.js";

export { JsonFileState };

/** The id in package.json's assemblyLine block; descriptors name it. */
export const JSONFILE_PLUGIN_ID = "jsonfile";

// The loader checks plugin.version against package.json: read it, never repeat it.
const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));

/**
 * `state: jsonFileState()` in gateway.ts. Only records the options: the host
 * materializes the adapter through the kernel when it boots.
 * @param {{ file?: string }} [options]
 */
export function jsonFileState(options = {}) {
  return adapterDescriptor("state", JSONFILE_PLUGIN_ID, options);
}

/** The object the kernel applies: it materializes this plugin's state descriptors. */
export const plugin = definePlugin({
  name: JSONFILE_PLUGIN_ID,
  version,
  apply(kernel) {
    kernel.hooks.slot.for("state").tapPromise({ name: JSONFILE_PLUGIN_ID }, async (descriptor, context) => {
      if (descriptor.plugin !== JSONFILE_PLUGIN_ID) return undefined;
      const options = /** @type {{ file?: string }} */ (descriptor.options);
      const agentDir = context.agentDir ?? process.cwd();
      // A relative path is the agent's, not whatever folder the host started in.
      const file = resolve(agentDir, options.file ?? context.env.JSONFILE_STATE_FILE ?? join(".assembly-line", "state.json"));
      return JsonFileState.open({ file });
    });
  },
});
