import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  AssemblyLineError,
  isAutomationDefinition,
  isChannelDefinition,
  isConnectionDefinition,
  isDisabledTool,
  isHookDefinition,
  isToolDefinition,
} from "@assemblyline-agents/core";
import { SOURCE_EXTENSIONS } from "./folder-files.js";
import type { createModuleLoader } from "./load-module.js";

/** What a file directly in each part folder defines; the compiler reads those files only, never a subfolder's. */
const PART_KINDS: Record<string, { what: string; is(value: unknown): boolean; lost: string }> = {
  tools: { what: "a tool", is: (value) => isToolDefinition(value) || isDisabledTool(value), lost: "the tool would never exist" },
  hooks: { what: "a hook", is: isHookDefinition, lost: "the hook would never run" },
  channels: { what: "a channel", is: isChannelDefinition, lost: "the channel would never be routed" },
  automations: { what: "an automation", is: isAutomationDefinition, lost: "the automation would never run" },
  connections: { what: "a connection", is: isConnectionDefinition, lost: "the connection would never be made" },
};

/** `tools/billing/x.ts` (also a subagent's, `subagents/a/tools/billing/x.ts`), `hooks/audit/x.ts`, ...: prefix, part, file name. */
const NESTED_PART_FILE = /^((?:subagents\/[^/]+\/)*)(tools|hooks|channels|automations|connections)\/.+\/([^/]+)$/;
const DECLARATIONS = /\.d\.[cm]?ts$/;
/** A default export, in any of the ways a module can write one; a module without one defines nothing. */
const DEFAULT_EXPORT = /\bexport\s+default\b|\bas\s+default\b|\bexport\s*\{\s*default\b|\bmodule\.exports\b|\bexports\.default\b/;

/**
 * Refuse a file in a subfolder of tools/, hooks/, channels/, automations/ or
 * connections/ that default-exports a definition of that folder's kind: it
 * builds, and is never used. Helper modules there stay allowed.
 *
 * `files` are the folder's behaviour files (listBehaviourFiles), `imported` the
 * ones the loaded parts import (listImportedFiles): an imported file is a helper
 * whatever it exports (a wrapped tool's base), and is not loaded again. Of the
 * rest, only a file with a default export is loaded, through the build's own
 * loader, so a script or test kept beside the helpers never runs at build.
 */
export async function refuseNestedDefinitions(agentDir: string, load: ReturnType<typeof createModuleLoader>, files: readonly string[], imported: readonly string[]): Promise<void> {
  const helpers = new Set(imported);
  for (const file of files) {
    const match = NESTED_PART_FILE.exec(file);
    if (!match || helpers.has(file) || DECLARATIONS.test(file) || !SOURCE_EXTENSIONS.some((ext) => file.endsWith(ext))) continue;
    const [, prefix, part, name] = match as unknown as [string, string, string, string];
    // Subagents have no hooks/, channels/, ... (compileSubagents refuses those folders).
    if (prefix !== "" && part !== "tools") continue;
    if (!DEFAULT_EXPORT.test(await readFile(join(agentDir, file), "utf8"))) continue;
    const kind = PART_KINDS[part]!;
    if (!kind.is((await load(join(agentDir, file))).default)) continue;
    throw new AssemblyLineError("AL_ERR_AGENT_FOLDER", `${file} default-exports ${kind.what}, but only files directly in ${prefix}${part}/ are compiled: ${kind.lost}`, {
      fix: `Move it to ${prefix}${part}/${name}; subfolders of ${prefix}${part}/ hold helper modules only.`,
    });
  }
}

/** Where the build reads each helper's definition from (one letter off, it reads nothing). */
const READ_FROM: Record<string, string> = {
  defineTool: "tools/<name>.ts",
  disableTool: "tools/<name>.ts",
  defineHook: "hooks/<name>.ts",
  defineChannel: "channels/<name>.ts",
  defineAutomation: "automations/<name>.ts",
  defineMcpConnection: "connections/<name>.ts",
  defineOpenApiConnection: "connections/<name>.ts",
  defineHttpConnection: "connections/<name>.ts",
  defineRunResolver: "resolvers.ts",
  defineInstrumentation: "instrumentation.ts",
  defineGateway: "gateway.ts",
  defineSandbox: "sandbox.ts",
  defineAgent: "agent.ts (a subagent's: subagents/<name>/agent.ts)",
  defineContext: "context.ts, set as agent.ts's context:",
};
const DEFAULT_DEFINITION = new RegExp(`\\bexport\\s+default\\s+(${Object.keys(READ_FROM).join("|")})\\s*\\(`);

/**
 * Refuse a file the build never read that default-exports a definition: `resolver.ts` for
 * resolvers.ts, `hook/audit.ts` for hooks/, a root `channel.ts`. It builds, and is never used:
 * a resolver restricting a caller's tools would silently not apply. Decided from the source
 * text alone (`export default defineX(`), so no file outside the agent's parts is run at build;
 * a definition written another way is not caught. `loaded` holds the absolute paths the build
 * loaded, `imported` what those import (helpers, whatever they export).
 */
export async function refuseUnreadDefinitions(agentDir: string, files: readonly string[], imported: readonly string[], loaded: ReadonlySet<string>): Promise<void> {
  const read = new Set(imported);
  for (const file of files) {
    if (read.has(file) || loaded.has(join(agentDir, file)) || DECLARATIONS.test(file) || !SOURCE_EXTENSIONS.some((ext) => file.endsWith(ext))) continue;
    const helper = DEFAULT_DEFINITION.exec(await readFile(join(agentDir, file), "utf8"))?.[1];
    if (helper === undefined) continue;
    throw new AssemblyLineError("AL_ERR_AGENT_FOLDER", `${file} default-exports ${helper}(...), but the build never reads ${file}: what it defines would never be used`, {
      fix: `Move it to ${READ_FROM[helper]}, where the build reads it; a file elsewhere holds helper code only.`,
    });
  }
}
