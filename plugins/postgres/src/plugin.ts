import { readFileSync } from "node:fs";
import { definePlugin } from "@assemblyline-agents/core";
import { POSTGRES_PLUGIN_ID, createPostgresState } from "./gateway.js";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/**
 * PostgreSQL state as a kernel plugin: materializes `neonPostgres()` /
 * `postgresState()` descriptors (migrating at boot) and passes on any other plugin's.
 */
export const plugin = definePlugin({
  name: POSTGRES_PLUGIN_ID,
  version: PACKAGE_VERSION,
  apply(kernel) {
    kernel.hooks.slot.for("state").tapPromise({ name: POSTGRES_PLUGIN_ID }, async (descriptor, context) =>
      descriptor.plugin === POSTGRES_PLUGIN_ID ? createPostgresState(descriptor as never, { env: context.env }) : undefined,
    );
  },
});
