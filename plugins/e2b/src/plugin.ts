import { readFileSync } from "node:fs";
import { definePlugin } from "@assemblyline-agents/core";
import { E2B_PLUGIN_ID, createE2bSandbox } from "./gateway.js";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** E2B as a kernel plugin: materializes e2bSandbox() descriptors (and sandbox.ts's adapter: "e2b"). */
export const plugin = definePlugin({
  name: E2B_PLUGIN_ID,
  version: PACKAGE_VERSION,
  apply(kernel) {
    kernel.hooks.slot.for("sandbox").tapPromise({ name: E2B_PLUGIN_ID }, async (descriptor, context) =>
      descriptor.plugin === E2B_PLUGIN_ID ? createE2bSandbox(descriptor as never, { hostEnv: context.env, ...(context.agentDir ? { agentDir: context.agentDir } : {}) }) : undefined,
    );
  },
});
