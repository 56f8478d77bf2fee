import type { ValidateFunction } from "ajv";
import {
  AssemblyLineError,
  BRIDGE_TOOL_NAMES,
  BUILT_IN_TOOL_NAMES,
  isApprovalPolicy,
  isToolDefinition,
  type BuiltInToolName,
  type CoreToolMode,
  type CoreToolPolicy,
  type ModelToolSpec,
  type SideEffect,
  type ToolDefinition,
  type ToolTableInfo,
  type ToolTableSurface,
} from "@assemblyline-agents/core";
import { BUILT_IN_REQUIREMENTS, builtInToolDefaults } from "../builtins/index.js";
import type { SourceBundle } from "../compiler/bundle.js";
import type { AgentManifest } from "../compiler/manifest.js";
import { toolFunctionProblem } from "../compiler/tool-functions.js";
import { MAX_TOOL_NAME_LENGTH } from "../compiler/tool-names.js";
import { compileOnFirstCall, compileSchema } from "../schema.js";
import { ToolSearchIndex, type ToolSearchHit } from "./tool-search.js";
import { approvalProblem } from "./approval-problem.js";
import { checkToolPolicy, isToolMode } from "./tool-policy.js";
import {
  capabilityProblem,
  inferExecution,
  inferVisibility,
  listedSkillToolProblem,
  type ResolvedExecution,
  type ResolvedVisibility,
  type ToolOrigin,
} from "./tool-visibility.js";

export interface ToolTableEntry {
  name: string;
  definition: ToolDefinition<any, any>;
  origin: ToolOrigin;
  /** The plugin that provided it, for `provided` tools. */
  provider: string | null;
  /** After coreToolPolicy: disabled tools stay listed so a forced call can be refused by name. */
  mode: CoreToolMode;
  /** After the inference rule (tool-visibility.ts), with the rule that decided it. */
  visibility: ResolvedVisibility;
  visibilityBecause: string;
  execution: ResolvedExecution;
  /** false when the tool needs a sandbox and the host has none: never offered, a call is refused by name. */
  available: boolean;
  namespace: string | null;
  tags: string[];
  aliases: string[];
  /** tool_search / tool_describe / tool_call as the runtime handles them (not overridden). */
  bridge: boolean;
  /** Offered up front when no per-run tool list says otherwise (bridge tools: see `hasSearchable`). */
  defaultVisible: boolean;
  /** The approval gate, from the definition or forced by policy. */
  approval: false | { reason: string; sideEffect: SideEffect };
  validateInput: ValidateFunction;
  validateOutput: ValidateFunction | null;
}

export interface ToolTableInput extends ToolTableInfo {
  manifest: AgentManifest;
  sourceBundle: SourceBundle;
  /** Agent policy merged with host policy and env (host wins). */
  coreToolPolicy: CoreToolPolicy;
}

const BRIDGES = new Set<string>(BRIDGE_TOOL_NAMES);
const TOOL_NAME = /^[a-z][a-z0-9]*(_[a-z0-9]+)*(__[a-z][a-z0-9]*(_[a-z0-9]+)*)?$/;

/**
 * The agent's tool table for one revision: built once, shared by every run.
 * Plugins add tools from outside the agent folder with `provide` (kernel hook
 * `tools`); those default to deferred, so tool_search finds them.
 */
export class ToolTable extends Map<string, ToolTableEntry> implements ToolTableSurface {
  /** Built on the first search or alias lookup after a change, so a turn that changes nothing builds nothing. */
  private searchIndex: ToolSearchIndex | undefined;
  private aliasIndex: Map<string, string> | undefined;

  constructor(private readonly settings: { coreToolPolicy: CoreToolPolicy; sandboxAvailable: boolean } = { coreToolPolicy: {}, sandboxAvailable: false }) {
    super();
  }

  // Tables change in place (a connection swapped for one with as many tools, a subagent's connection tools
  // narrowed): every change drops the search index, or a search would find a withdrawn tool and miss its
  // successor; the alias index only when an alias comes or goes, so providing many tools without aliases
  // (a connection's) checks each against the aliases without rebuilding the index each time.
  override set(name: string, entry: ToolTableEntry): this {
    this.searchIndex = undefined;
    if (entry.aliases.length > 0 || (this.get(name)?.aliases.length ?? 0) > 0) this.aliasIndex = undefined;
    return super.set(name, entry);
  }

  override delete(name: string): boolean {
    this.searchIndex = undefined;
    if ((this.get(name)?.aliases.length ?? 0) > 0) this.aliasIndex = undefined;
    return super.delete(name);
  }

  override clear(): void {
    this.dropIndexes();
    super.clear();
  }

  private dropIndexes(): void {
    this.searchIndex = undefined;
    this.aliasIndex = undefined;
  }

  names(): string[] {
    return [...this.keys()];
  }

  /** Add (or, internally, replace) an entry, applying policy, the visibility rule and schemas. */
  add(name: string, definition: ToolDefinition<any, any>, origin: ToolOrigin, rule: { listed: boolean | null; provider?: string }): ToolTableEntry {
    const mode = this.settings.coreToolPolicy[name] ?? "enabled";
    const { visibility, because } = inferVisibility({ origin, definition, listed: rule.listed });
    const builtIn = origin === "built-in";
    const execution = builtIn && BUILT_IN_REQUIREMENTS[name as BuiltInToolName] === "sandbox" ? "sandbox" : inferExecution(definition);
    const available = execution !== "sandbox" || this.settings.sandboxAvailable;
    const policy = definition.needsApproval;
    const approval = isApprovalPolicy(policy)
      ? { reason: policy.reason, sideEffect: policy.sideEffect }
      : policy === true || mode === "approval"
        ? { reason: mode === "approval" ? `Host policy requires approval for ${name}.` : `${name} requires approval.`, sideEffect: definition.sideEffect ?? "external" }
        : false;
    const bridge = builtIn && BRIDGES.has(name);
    const namespace = definition.capability?.namespace ?? (name.includes("__") ? name.split("__")[0]! : null);
    // Compiled on a tool's first call: a command that opens a runtime (runs show, approve) or a host whose runs
    // call a few of their tools does not compile every schema, and ajv's meta-schema, before its first step.
    // The build has compiled every authored tool's schemas and the built-ins' are the kernel's own; a tool
    // provided at run time arrives unchecked, so its schemas compile now and a bad one is refused at once
    // (a format the runtime does not know is left to the provider's service, which wrote the schema).
    const validator = origin === "provided" ? (schema: unknown) => compileSchema(schema, "ignore") : compileOnFirstCall;
    const entry: ToolTableEntry = {
      name,
      definition,
      origin,
      provider: rule.provider ?? null,
      mode,
      visibility,
      visibilityBecause: because,
      execution,
      available,
      namespace,
      tags: [...(definition.capability?.tags ?? [])],
      aliases: [...(definition.capability?.aliases ?? [])],
      bridge,
      defaultVisible: !bridge && mode !== "disabled" && available && visibility === "always",
      approval,
      validateInput: validator(definition.inputSchema),
      validateOutput: definition.outputSchema ? validator(definition.outputSchema) : null,
    };
    this.set(name, entry);
    return entry;
  }

  provide(name: string, definition: ToolDefinition<any, any>, options: { provider: string }): void {
    const refuse = (problem: string): never => {
      throw new AssemblyLineError("AL_ERR_TOOL_PROVIDED", `plugin ${options?.provider ?? "?"} provided tool "${name}": ${problem}`, {
        fix: `Give provided tools a unique snake_case name of at most ${MAX_TOOL_NAME_LENGTH} characters (\`<connection>__<tool>\` for connection tools), aliases no other tool has as its name or alias, and a defineTool(...) definition.`,
      });
    };
    if (typeof name !== "string" || !TOOL_NAME.test(name)) refuse("the name is not snake_case");
    // Model APIs refuse a longer function name, and with it every request that offers the tool.
    if (name.length > MAX_TOOL_NAME_LENGTH) refuse(`the name is ${name.length} characters; model APIs take at most ${MAX_TOOL_NAME_LENGTH}`);
    if (this.has(name)) refuse(`the name is taken by a ${this.get(name)!.origin} tool`);
    const nameHolder = this.aliasHolder(name);
    if (nameHolder) refuse(`the name is an alias of ${describeHolder(nameHolder)}`);
    if (!isToolDefinition(definition)) refuse("the definition is not a defineTool(...) result");
    if (typeof definition.description !== "string" || definition.description.trim() === "") refuse("description must be a non-empty string");
    const problem = toolFunctionProblem(definition) ?? capabilityProblem(definition) ?? approvalProblem(definition);
    if (problem) refuse(problem);
    // The build keeps the agent's own aliases unique; a provided tool taking one would receive the calls (and
    // skip the approval gate) meant for the tool that declared it.
    for (const alias of definition.capability?.aliases ?? []) {
      if (alias === name) refuse(`alias "${alias}" is the tool's own name`);
      const holder = this.get(alias) ?? this.aliasHolder(alias);
      if (holder) refuse(`alias "${alias}" is already ${holder.name === alias ? "the name" : "an alias"} of ${describeHolder(holder)}`);
    }
    try {
      this.add(name, definition, "provided", { listed: null, provider: options.provider });
    } catch (error) {
      refuse(`its inputSchema or outputSchema does not compile: ${(error as Error).message}`);
    }
  }

  /** Tools tool_search may find and tool_call may reach without being offered: deferred, enabled, runnable. */
  searchable(): ToolTableEntry[] {
    return [...this.values()].filter((entry) => entry.visibility === "deferred" && entry.mode !== "disabled" && entry.available && !entry.bridge);
  }

  hasSearchable(): boolean {
    return this.searchable().length > 0;
  }

  search(query: string, limit: number): ToolSearchHit[] {
    this.searchIndex ??= new ToolSearchIndex(new Map(this.searchable().map((entry) => [entry.name, entry])));
    return this.searchIndex.search(query, limit);
  }

  /** A tool by name or alias (aliases are unique across the table: checked at build, and by `provide`). */
  resolve(nameOrAlias: string): ToolTableEntry | undefined {
    return this.get(nameOrAlias) ?? this.aliasHolder(nameOrAlias);
  }

  /** The tool that declares `alias`, if one does. */
  private aliasHolder(alias: string): ToolTableEntry | undefined {
    if (!this.aliasIndex) {
      this.aliasIndex = new Map();
      for (const entry of this.values()) for (const held of entry.aliases) this.aliasIndex.set(held, entry.name);
    }
    const name = this.aliasIndex.get(alias);
    return name === undefined ? undefined : this.get(name);
  }
}

/** How a provide refusal names a tool already in the table. */
function describeHolder(entry: ToolTableEntry): string {
  return `${entry.origin} tool "${entry.name}"${entry.provider ? ` (plugin ${entry.provider})` : ""}`;
}

/** Build the table from the manifest: built-ins, authored tools, overrides, disables, policy. */
/**
 * The side-effect class a tool declares: its `sideEffect`, else the one its `approvalRequired(reason, sideEffect)`
 * gives (the two may not differ: approval-problem.ts); null when it declares none.
 */
export function declaredSideEffect(definition: ToolTableEntry["definition"]): SideEffect | null {
  return definition.sideEffect ?? (isApprovalPolicy(definition.needsApproval) ? definition.needsApproval.sideEffect : null);
}

export function buildToolTable(input: ToolTableInput): ToolTable {
  const { manifest, sourceBundle, coreToolPolicy, sandboxAvailable } = input;
  const table = new ToolTable({ coreToolPolicy, sandboxAvailable });
  const removed = new Set(manifest.tools.filter((entry) => entry.kind === "disabled").map((entry) => entry.name));
  const authored = new Map(manifest.tools.filter((entry) => entry.kind !== "disabled").map((entry) => [entry.name, entry]));
  const listed = manifest.agent.defaultTools ? new Set(manifest.agent.defaultTools) : null;
  const listedOf = (name: string) => (listed ? listed.has(name) : null);

  for (const name of BUILT_IN_TOOL_NAMES) {
    if (removed.has(name) || authored.has(name)) continue;
    const requirement = BUILT_IN_REQUIREMENTS[name as BuiltInToolName];
    if (requirement === "unavailable") continue;
    if (requirement === "skills" && (manifest.skills ?? []).length === 0 && !manifest.agent.selfImprovement?.writable) continue;
    if (requirement === "subagents" && (manifest.subagents ?? []).length === 0) continue;
    table.add(name, builtInToolDefaults[name as BuiltInToolName], "built-in", { listed: listedOf(name) });
  }
  for (const [name, entry] of authored) {
    const definition = sourceBundle.tools[name];
    if (definition) table.add(name, definition, entry.kind === "override" ? "override" : "authored", { listed: listedOf(name) });
  }
  return table;
}

/**
 * The tools a run offers: the table's defaults (the bridge tools only when
 * something is deferred), or a resolver's list replacing them wholesale.
 */
export function visibleTools(table: ToolTable, defaultTools: string[] | null | undefined, options: { discovery?: boolean } = {}): ToolTableEntry[] {
  const entries = [...table.values()].filter((entry) => entry.mode !== "disabled" && entry.available);
  if (defaultTools) {
    const wanted = new Set(defaultTools);
    return entries.filter((entry) => wanted.has(entry.name));
  }
  // Tools may appear during the run (a connection added dynamically): then discovery is offered from the start.
  const discovery = options.discovery === true || table.hasSearchable();
  return entries.filter((entry) => (entry.bridge ? discovery : entry.defaultVisible));
}

/**
 * Why a defaultTools list cannot be honoured, naming each tool, or null. Tools
 * the host disabled by policy are not errors: the policy is the host's word.
 * A skill-only tool is refused in either list (agent.ts and a resolver's alike).
 */
export function defaultToolsProblem(table: ToolTable, defaultTools: string[]): string | null {
  const problems: string[] = [];
  for (const name of defaultTools) {
    const entry = table.get(name);
    if (!entry) problems.push(`"${name}" is not a tool of this agent`);
    else if (entry.visibility === "hidden") problems.push(`"${name}" is hidden (runtime-internal)`);
    else if (entry.visibility === "skill") problems.push(listedSkillToolProblem(name));
    else if (!entry.available) problems.push(`"${name}" needs a sandbox and this host has no sandbox adapter`);
  }
  return problems.length ? problems.join("; ") : null;
}

export function toModelToolSpec(entry: ToolTableEntry): ModelToolSpec {
  return { name: entry.name, description: entry.definition.description, inputSchema: entry.definition.inputSchema };
}

/** Merge agent policy, the env shorthand for bash, and host policy (host wins). */
export function mergeToolPolicy(agentPolicy: CoreToolPolicy, hostPolicy: CoreToolPolicy | undefined, env: Record<string, string | undefined>): CoreToolPolicy {
  const merged: CoreToolPolicy = { ...checkToolPolicy(agentPolicy, "agent.ts coreToolPolicy") };
  const bashMode = env.ASSEMBLY_LINE_BASH_TOOL_MODE;
  if (bashMode) {
    if (!isToolMode(bashMode)) {
      throw new AssemblyLineError("AL_ERR_TOOL_POLICY", `ASSEMBLY_LINE_BASH_TOOL_MODE=${bashMode} is not one of enabled, approval, disabled`, { fix: "Set it to enabled, approval or disabled, or unset it." });
    }
    merged.bash = bashMode;
  }
  return { ...merged, ...checkToolPolicy(hostPolicy, "RuntimeOptions.coreToolPolicy") };
}
