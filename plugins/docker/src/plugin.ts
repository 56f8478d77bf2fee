import { readFileSync } from "node:fs";
import { definePlugin } from "@assemblyline-agents/core";
import { DOCKER_PLUGIN_ID, createDockerDeploy, createDockerSandbox } from "./gateway.js";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Docker as a kernel plugin: materializes dockerSandbox() and dockerDeploy() descriptors and passes on any other plugin's. */
export const plugin = definePlugin({
  name: DOCKER_PLUGIN_ID,
  version: PACKAGE_VERSION,
  apply(kernel) {
    kernel.hooks.slot.for("sandbox").tapPromise({ name: DOCKER_PLUGIN_ID }, async (descriptor, context) =>
      descriptor.plugin === DOCKER_PLUGIN_ID ? createDockerSandbox(descriptor as never, context.agentDir ? { agentDir: context.agentDir } : {}) : undefined,
    );
    kernel.hooks.slot.for("deploy").tapPromise({ name: DOCKER_PLUGIN_ID }, async (descriptor) =>
      descriptor.plugin === DOCKER_PLUGIN_ID ? createDockerDeploy(descriptor as never) : undefined,
    );
  },
});
