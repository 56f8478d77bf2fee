import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { AssemblyLineError, BUILT_IN_TOOL_NAMES, DEFAULT_RUN_BUDGETS, RUN_BUDGET_NAMES, isAgentDefinition, type AgentDefinition, type RunBudgets } from "@assemblyline-agents/core";
import { checkBudgets } from "../run/budget.js";
import { compileSchema } from "../schema.js";
import { resolveInstructions } from "./instructions.js";
import type { createModuleLoader } from "./load-module.js";
import type { SubagentManifestEntry, ToolManifestEntry } from "./manifest.js";
import { DECLARATIONS, SKIPPED_CODE, SOURCE_EXTENSIONS, findSource } from "./folder-files.js";
import { checkAgentFieldTypes } from "./agent-fields.js";
import { compileSkills } from "./skills.js";
import { hashSource } from "./source-files.js";
import { removedSlots } from "./removed-slots.js";
import { KNOWN_KEYS, refuseUnknownKeys } from "./known-keys.js";

type Loader = ReturnType<typeof createModuleLoader>;

/** What a subagent may narrow: its parent's model, tools, connections and budgets. */
export interface ParentScope {
  /** e.g. `subagents/researcher/` ("" for the root). */
  prefix: string;
  model: string;
  /** Tools a child may name in `tools: [...]`: the parent's authored tools and the ones it inherited. */
  tools: ReadonlySet<string>;
  /**
   * Connections a child may name in `connections: [...]`: the root's connections/ files, or the ones the parent named.
   * The root's children may name others too: the host declares connections the build cannot see, so the runtime
   * checks those names when it starts (refuseUnknownSubagentConnections).
   */
  connections: ReadonlySet<string>;
  /** The parent's budgets as declared: its own agent.ts `budgets` over its parent's (undefined when none declares any). */
  budgets: RunBudgets | undefined;
  /** Built-in slots disableTool() removed at the parent or above it: the child goes without them too (removedSlots). */
  removedSlots: ReadonlySet<string>;
}

export interface SubagentCompilerParts {
  rootDir: string;
  load: Loader;
  /** Compile `<prefix>tools/`; sources (and errors) name files from the root agent folder. */
  compileTools(prefix: string): Promise<ToolManifestEntry[]>;
}

const SUBAGENT_NAME = /^[a-z][a-z0-9_-]*$/;
/** As connections/ file names and dynamic connection names must be. */
const CONNECTION_NAME = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
/** Parts of a root agent folder that have no meaning inside a subagent. */
const ROOT_ONLY_PARTS = ["hooks", "channels", "automations", "connections"];
const ROOT_ONLY_FILES = ["gateway", "resolvers", "context", "sandbox", "instrumentation"];
/** agent.ts keys that only a root agent may set (a subagent's name is its folder's). */
const ROOT_ONLY_KEYS = ["defaultTools", "coreToolPolicy", "selfImprovement", "dynamicAutomations", "dynamicConnections", "id", "name", "context"] as const;
/** agent.ts keys only a subagent may set. */
export const SUBAGENT_ONLY_KEYS = ["tools", "connections", "workspace", "outputSchema"] as const;

/** Compile every `subagents/<name>/` of the agent at `parent.prefix`, recursively. */
export async function compileSubagents(parts: SubagentCompilerParts, parent: ParentScope): Promise<SubagentManifestEntry[]> {
  const dir = join(parts.rootDir, parent.prefix, "subagents");
  if (!existsSync(dir)) return [];
  const listed = readdirSync(dir, { withFileTypes: true }).filter((entry) => !entry.name.startsWith("."));
  // A code file here, in any extension the loader could run, would be left out of the build without a word:
  // a subagent is a folder (declarations aside; a file that is not code, a README.md, passes).
  for (const entry of listed) {
    if (entry.isDirectory() || !isCode(entry.name)) continue;
    const stem = entry.name.slice(0, entry.name.lastIndexOf("."));
    throw new AssemblyLineError("AL_ERR_SUBAGENT_DEFINITION", `${parent.prefix}subagents/${entry.name}: a subagent is a folder, not a file`, {
      fix: `Move it to ${parent.prefix}subagents/${stem}/agent.ts, default-exporting defineAgent({ description: "When to delegate to ${stem}" }).`,
    });
  }
  const names = listed
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  const entries: SubagentManifestEntry[] = [];
  for (const name of names) entries.push(await compileSubagent(parts, parent, name));
  return entries;
}

/** Code the loader could run, declarations aside. */
function isCode(name: string): boolean {
  return !DECLARATIONS.test(name) && (SOURCE_EXTENSIONS.some((ext) => name.endsWith(ext)) || SKIPPED_CODE.test(name));
}

async function compileSubagent(parts: SubagentCompilerParts, parent: ParentScope, name: string): Promise<SubagentManifestEntry> {
  const prefix = `${parent.prefix}subagents/${name}/`;
  const dir = join(parts.rootDir, prefix);
  const refuse = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_DEFINITION", `${prefix}: ${problem}`, { fix });
  };
  const narrowing = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_NARROWING", `${prefix}: ${problem}`, { fix });
  };
  if (!SUBAGENT_NAME.test(name)) refuse(`"${name}" is not a subagent name`, "Name the folder with lower-case letters, digits, '_' or '-', starting with a letter.");
  const agentFile = findSource(parts.rootDir, "agent", prefix) ?? refuse("has no agent.ts", 'Add agent.ts: `export default defineAgent({ description: "When to delegate to this subagent" })`.');
  const agent = (await parts.load(join(dir, agentFile))).default;
  if (!isAgentDefinition(agent)) refuse(`${agentFile} does not default-export defineAgent(...)`, 'Write `export default defineAgent({ description: "..." })`.');
  const definition = agent as AgentDefinition;
  if ("harness" in definition) {
    throw new AssemblyLineError("AL_ERR_AGENT_HARNESS_KEY", `${prefix}${agentFile} declares harness:, which agents may not choose`, {
      fix: "Remove the harness: key; subagents run on the same engine route as their model.",
    });
  }
  refuseUnknownKeys(definition, KNOWN_KEYS.agent, `${prefix}${agentFile}`, "AL_ERR_SUBAGENT_DEFINITION");
  checkAgentFieldTypes(definition, `${prefix}${agentFile}`, "AL_ERR_SUBAGENT_DEFINITION", { root: false });
  if (typeof definition.description !== "string" || definition.description.trim() === "") {
    refuse("agent.ts has no description", "Set description: the parent reads it to decide when to delegate.");
  }
  for (const key of ROOT_ONLY_KEYS) {
    if (definition[key] !== undefined) {
      refuse(
        `agent.ts sets ${key}, which only a root agent may set`,
        key === "name" ? `Remove name from ${prefix}${agentFile}: a subagent's name is its folder's (rename ${prefix} to rename it).` : `Remove ${key} from ${prefix}${agentFile}.`,
      );
    }
  }
  for (const part of ROOT_ONLY_PARTS) {
    if (existsSync(join(dir, part))) refuse(`has a ${part}/ folder, which only a root agent may have`, `Move ${part}/ to the root agent folder.`);
  }
  for (const stem of ROOT_ONLY_FILES) {
    const file = findSource(parts.rootDir, stem, prefix);
    if (file) refuse(`has ${file}, which only a root agent may have`, `Move ${file} to the root agent folder.`);
  }

  const model = definition.model ?? parent.model;
  if (typeof model !== "string" || model.trim() === "") refuse("model must be a provider/model string", 'Omit model to inherit the parent\'s, or set e.g. "openai/gpt-5.4-mini".');
  if (providerOf(model) !== providerOf(parent.model)) {
    narrowing(`model "${model}" is not of the parent's provider (${providerOf(parent.model)})`, `Use a ${providerOf(parent.model)} model, or omit model to inherit "${parent.model}".`);
  }
  const inheritedTools = stringList(definition.tools, "tools", refuse);
  const lacking = inheritedTools.filter((tool) => !parent.tools.has(tool));
  if (lacking.length > 0) {
    narrowing(`names tool${lacking.length > 1 ? "s" : ""} ${lacking.map((tool) => `"${tool}"`).join(", ")} that the parent lacks`, `Name only the parent's tools (${[...parent.tools].sort().join(", ") || "none"}), or add them to the parent.`);
  }
  const connections = stringList(definition.connections, "connections", refuse);
  const misnamed = connections.find((connection) => !CONNECTION_NAME.test(connection));
  if (misnamed !== undefined) refuse(`connections names ${JSON.stringify(misnamed)}, which is no connection name`, "Name connections as their files or the host name them: snake_case, e.g. weather_api.");
  const missingConnections = parent.prefix === "" ? [] : connections.filter((connection) => !parent.connections.has(connection));
  if (missingConnections.length > 0) {
    narrowing(
      `names connection${missingConnections.length > 1 ? "s" : ""} ${missingConnections.map((c) => `"${c}"`).join(", ")} that the parent lacks`,
      `Name only the parent's connections (${[...parent.connections].sort().join(", ") || "none"}): the ones it names in its connections: [...].`,
    );
  }
  const budgets = subagentBudgets(definition.budgets, parent, `${prefix}${agentFile}`, narrowing);
  const workspace = definition.workspace ?? "shared";
  if (workspace !== "shared" && workspace !== "isolated") refuse(`workspace ${JSON.stringify(workspace)} is not "shared" or "isolated"`, 'Use workspace: "shared" (the parent run\'s) or "isolated" (its own).');
  if (definition.outputSchema !== undefined) {
    try {
      compileSchema(definition.outputSchema);
    } catch (error) {
      refuse(`outputSchema is not a valid JSON Schema: ${(error as Error).message}`, "Correct the outputSchema (ajv must compile it).");
    }
  }

  const tools = await parts.compileTools(prefix);
  const clash = tools.find((entry) => inheritedTools.includes(entry.name));
  if (clash) refuse(`tools/${clash.name} has the name of a parent tool it also names in tools: [...]`, "Rename one of them.");
  const own = new Set(tools.filter((entry) => entry.kind !== "disabled").map((entry) => entry.name));
  const removed = removedSlots(tools, parent.removedSlots);
  const available = new Set([...own, ...inheritedTools, ...BUILT_IN_TOOL_NAMES.filter((name) => !removed.has(name))]);
  const { instructions, instructionsSource } = await resolveInstructions(parts.rootDir, prefix, agentFile, definition);
  const skills = await compileSkills(dir, prefix, available, removed);
  const subagents = await compileSubagents(parts, { prefix, model, tools: new Set([...own, ...inheritedTools]), connections: new Set(connections), budgets, removedSlots: removed });
  return {
    name,
    dir: prefix.replace(/\/$/, ""),
    description: definition.description!.trim(),
    model,
    modelInherited: definition.model === undefined,
    instructions,
    source: await hashSource(parts.rootDir, `${prefix}${agentFile}`),
    instructionsSource,
    outputSchema: definition.outputSchema ?? null,
    workspace,
    inheritedTools,
    connections,
    ...(budgets !== undefined ? { budgets } : {}),
    tools,
    skills,
    subagents,
  };
}

/**
 * The budgets a subagent's runs run under before host ceilings and defaults:
 * its own over its parent's, each no looser than the parent's (a child only narrows).
 * A budget the parent leaves out is the default for it (50 turns, ...), so a child may not pass that either.
 */
function subagentBudgets(own: unknown, parent: ParentScope, where: string, narrowing: (problem: string, fix: string) => never): RunBudgets | undefined {
  checkBudgets(own, `${where} budgets`);
  if (own === undefined) return parent.budgets;
  for (const name of RUN_BUDGET_NAMES) {
    const limit = own[name];
    const declared = parent.budgets?.[name];
    const ceiling = declared ?? (DEFAULT_RUN_BUDGETS as RunBudgets)[name];
    if (limit !== undefined && ceiling !== undefined && limit > ceiling) {
      if (declared !== undefined) narrowing(`budgets.${name} is ${limit}, above the parent's ${ceiling}`, `Set budgets.${name} to at most ${ceiling}, or leave it out to inherit the parent's.`);
      else {
        narrowing(
          `budgets.${name} is ${limit}, above the parent's ${ceiling} (the default: the parent's agent.ts sets no ${name}, and a host's budgets option is not known at build)`,
          `Set budgets.${name} to at most ${ceiling}, or raise the parent's first: budgets: { ${name}: ${limit} } in the parent's agent.ts (a host's budgets option still caps it at run time).`,
        );
      }
    }
  }
  const merged: RunBudgets = { ...parent.budgets };
  for (const [name, value] of Object.entries(own)) if (value !== undefined) Object.assign(merged, { [name]: value });
  return merged;
}

function stringList(value: unknown, key: string, refuse: (problem: string, fix: string) => never): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== "string" || item === "")) {
    refuse(`${key} must be a list of names`, `Write ${key}: ["name", ...].`);
  }
  return [...new Set(value as string[])];
}

export function providerOf(modelSpec: string): string {
  return modelSpec.split(/[/:]/)[0] ?? modelSpec;
}
