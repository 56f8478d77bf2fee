import { readFileSync } from "node:fs";
import { definePlugin } from "@assemblyline-agents/core";
import { DAYTONA_PLUGIN_ID, createDaytonaSandbox } from "./gateway.js";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Daytona as a kernel plugin: materializes daytonaSandbox() descriptors (and sandbox.ts's adapter: "daytona"). */
export const plugin = definePlugin({
  name: DAYTONA_PLUGIN_ID,
  version: PACKAGE_VERSION,
  apply(kernel) {
    kernel.hooks.slot.for("sandbox").tapPromise({ name: DAYTONA_PLUGIN_ID }, async (descriptor, context) =>
      descriptor.plugin === DAYTONA_PLUGIN_ID ? createDaytonaSandbox(descriptor as never, { hostEnv: context.env, ...(context.agentDir ? { agentDir: context.agentDir } : {}) }) : undefined,
    );
  },
});
