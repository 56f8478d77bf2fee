import { readFileSync } from "node:fs";
import { definePlugin } from "@assemblyline-agents/core";
import { MODAL_PLUGIN_ID, createModalSandbox } from "./gateway.js";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Modal as a kernel plugin: materializes modalSandbox() descriptors (and sandbox.ts's adapter: "modal"). */
export const plugin = definePlugin({
  name: MODAL_PLUGIN_ID,
  version: PACKAGE_VERSION,
  apply(kernel) {
    kernel.hooks.slot.for("sandbox").tapPromise({ name: MODAL_PLUGIN_ID }, async (descriptor, context) =>
      descriptor.plugin === MODAL_PLUGIN_ID ? createModalSandbox(descriptor as never, { hostEnv: context.env, ...(context.agentDir ? { agentDir: context.agentDir } : {}) }) : undefined,
    );
  },
});
