import type { ValidateFunction } from "ajv";
import {
  BUILT_IN_TOOL_NAMES,
  isApprovalPolicy,
  type BuiltInToolName,
  type CoreToolMode,
  type CoreToolPolicy,
  type ModelToolSpec,
  type SideEffect,
  type ToolDefinition,
} from "@assemblyline-agents/core";
import { BUILT_IN_REQUIREMENTS, builtInToolDefaults } from "../builtins/index.js";
import type { SourceBundle } from "../compiler/bundle.js";
import type { AgentManifest } from "../compiler/manifest.js";
import { compileSchema } from "../schema.js";

export interface ToolTableEntry {
  name: string;
  definition: ToolDefinition<any, any>;
  origin: "built-in" | "authored" | "override";
  /** After coreToolPolicy: disabled tools stay listed so a forced call can be refused by name. */
  mode: CoreToolMode;
  /** Offered up front when no per-run tool list says otherwise. */
  defaultVisible: boolean;
  /** The approval gate, from the definition or forced by policy. */
  approval: false | { reason: string; sideEffect: SideEffect };
  validateInput: ValidateFunction;
  validateOutput: ValidateFunction | null;
}

export type ToolTable = Map<string, ToolTableEntry>;

export interface ToolTableInput {
  manifest: AgentManifest;
  sourceBundle: SourceBundle;
  /** Agent policy merged with host policy and env (host wins). */
  coreToolPolicy: CoreToolPolicy;
  /** Whether a sandbox adapter backs the filesystem built-ins. */
  sandboxAvailable: boolean;
}

const HIDDEN_UNTIL_DISCOVERED = new Set(["deferred", "skill", "hidden"]);

/** The agent's tool table for one revision: built once, shared by every run. */
export function buildToolTable(input: ToolTableInput): ToolTable {
  const { manifest, sourceBundle, coreToolPolicy, sandboxAvailable } = input;
  const table: ToolTable = new Map();
  const removed = new Set(manifest.tools.filter((entry) => entry.kind === "disabled").map((entry) => entry.name));
  const authored = new Map(manifest.tools.filter((entry) => entry.kind !== "disabled").map((entry) => [entry.name, entry]));
  const listed = manifest.agent.defaultTools ? new Set(manifest.agent.defaultTools) : null;

  const add = (name: string, definition: ToolDefinition<any, any>, origin: ToolTableEntry["origin"]) => {
    const mode = coreToolPolicy[name] ?? "enabled";
    const visibility = definition.capability?.visibility;
    const defaultVisible =
      mode !== "disabled" &&
      visibility !== "hidden" &&
      (listed
        ? listed.has(name) || visibility === "always" || definition.defaultEnabled === true
        : definition.defaultEnabled === true || !HIDDEN_UNTIL_DISCOVERED.has(visibility ?? "auto"));
    const policy = definition.needsApproval;
    const approval = isApprovalPolicy(policy)
      ? { reason: policy.reason, sideEffect: policy.sideEffect }
      : policy === true || mode === "approval"
        ? { reason: mode === "approval" ? `Host policy requires approval for ${name}.` : `${name} requires approval.`, sideEffect: definition.sideEffect ?? "external" }
        : false;
    table.set(name, {
      name,
      definition,
      origin,
      mode,
      defaultVisible,
      approval,
      validateInput: compileSchema(definition.inputSchema),
      validateOutput: definition.outputSchema ? compileSchema(definition.outputSchema) : null,
    });
  };

  for (const name of BUILT_IN_TOOL_NAMES) {
    if (removed.has(name) || authored.has(name)) continue;
    const requirement = BUILT_IN_REQUIREMENTS[name as BuiltInToolName];
    if (requirement === "unavailable" || (requirement === "sandbox" && !sandboxAvailable)) continue;
    if (requirement === "skills" && (manifest.skills ?? []).length === 0 && !manifest.agent.selfImprovement?.writable) continue;
    if (requirement === "subagents" && (manifest.subagents ?? []).length === 0) continue;
    add(name, builtInToolDefaults[name as BuiltInToolName], "built-in");
  }
  for (const [name, entry] of authored) {
    const definition = sourceBundle.tools[name];
    if (definition) add(name, definition, entry.kind === "override" ? "override" : "authored");
  }
  return table;
}

/** The tools a run offers: the table's defaults, or a resolver's list replacing them wholesale. */
export function visibleTools(table: ToolTable, defaultTools: string[] | null | undefined): ToolTableEntry[] {
  const entries = [...table.values()].filter((entry) => entry.mode !== "disabled");
  if (!defaultTools) return entries.filter((entry) => entry.defaultVisible);
  const wanted = new Set(defaultTools);
  return entries.filter((entry) => wanted.has(entry.name));
}

export function toModelToolSpec(entry: ToolTableEntry): ModelToolSpec {
  return { name: entry.name, description: entry.definition.description, inputSchema: entry.definition.inputSchema };
}

/** Merge agent policy, the env shorthand for bash, and host policy (host wins). */
export function mergeToolPolicy(agentPolicy: CoreToolPolicy, hostPolicy: CoreToolPolicy | undefined, env: Record<string, string | undefined>): CoreToolPolicy {
  const merged: CoreToolPolicy = { ...agentPolicy };
  const bashMode = env.ASSEMBLY_LINE_BASH_TOOL_MODE;
  if (bashMode) {
    if (bashMode !== "enabled" && bashMode !== "approval" && bashMode !== "disabled") {
      throw new TypeError(`ASSEMBLY_LINE_BASH_TOOL_MODE=${bashMode} is not one of enabled, approval, disabled`);
    }
    merged.bash = bashMode;
  }
  return { ...merged, ...(hostPolicy ?? {}) };
}
