import { readFileSync } from "node:fs";
import { definePlugin, type PluginDefinition } from "@assemblyline-agents/core";
import { codexAgentHarness } from "./harness.js";
import { CODEX_PROVIDER, type CodexHarnessOptions } from "./options.js";

export const CODEX_PLUGIN_ID = "codex";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Routes `openai-codex/*` model specs to the Codex engine through hooks.harness. */
export function codexPlugin(options: CodexHarnessOptions = {}): PluginDefinition {
  const harness = codexAgentHarness(options);
  return definePlugin({
    name: CODEX_PLUGIN_ID,
    version: PACKAGE_VERSION,
    apply(kernel) {
      kernel.hooks.harness.tapPromise({ name: CODEX_PLUGIN_ID }, async ({ modelSpec }) => (modelSpec.startsWith(`${CODEX_PROVIDER}/`) ? harness : undefined));
    },
  });
}

/** The plugin with default options, for hosts that load packages by their `plugin` export. */
export const plugin = codexPlugin();
