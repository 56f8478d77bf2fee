import type { ConnectionInfo, ContextPolicy, JsonSchema, RunBudgets, RunRecord } from "@assemblyline-agents/core";
import { AssemblyLineError } from "@assemblyline-agents/core";
import type { SourceBundle, SubagentBundle } from "../compiler/bundle.js";
import type { AgentManifest, SkillManifestEntry, SubagentManifestEntry } from "../compiler/manifest.js";
import { removedSlots } from "../compiler/removed-slots.js";
import { CONNECTION_TOOL_PROVIDER } from "../connections/connection-registry.js";
import { resolveBudgets } from "../run/budget.js";
import { ToolTable, buildToolTable, type ToolTableInput } from "../run/tool-table.js";

/**
 * One agent of the folder as a run sees it: the root agent, or a subagent at
 * `path`. Runs of a subagent use its instructions, model, tools, skills,
 * connections and budgets, never the parent's (beyond what it named or inherits).
 */
export interface AgentProfile {
  /** "" for the root agent, else `researcher` or `researcher/fact_checker`. */
  path: string;
  /** The id runs and the skill store use: the root's id, or `<root id>/<path>`. */
  agentId: string;
  name: string;
  description: string | null;
  model: string;
  /** Runs use the spawning run's model (a host-forced one included) rather than `model`. */
  modelInherited: boolean;
  instructions: string;
  context: ContextPolicy | undefined;
  defaultTools: string[] | null;
  table: ToolTable;
  skills: SkillManifestEntry[];
  selfImprovement: { writable: boolean; writeApproval: boolean };
  outputSchema: JsonSchema | null;
  workspace: "shared" | "isolated";
  /** The limits its runs run under: agent.ts budgets (a subagent's over its parent's) with the host's ceilings and the defaults applied. */
  budgets: RunBudgets;
  /** The connections its runs may use: null for the root (all of them), else the ones its agent.ts names (none when it names none). */
  connections: ReadonlySet<string> | null;
  /** Direct children by folder name. */
  subagents: Map<string, AgentProfile>;
}

/**
 * The root profile and, below it, every subagent's, each with its tool table
 * and its budgets under `hostBudgets` (RuntimeOptions.budgets, ceilings over agent.ts's).
 */
export function buildAgentProfiles(rootTable: ToolTable, tableInput: ToolTableInput, hostBudgets: RunBudgets | undefined): AgentProfile {
  const { manifest, sourceBundle } = tableInput;
  const root: AgentProfile = {
    path: "",
    agentId: manifest.agent.id,
    name: manifest.agent.name,
    description: manifest.agent.description,
    model: manifest.agent.model,
    modelInherited: false,
    instructions: manifest.agent.instructions,
    context: sourceBundle.agent.context,
    defaultTools: manifest.agent.defaultTools,
    table: rootTable,
    skills: manifest.skills ?? [],
    selfImprovement: manifest.agent.selfImprovement ?? { writable: false, writeApproval: false },
    outputSchema: null,
    workspace: "shared",
    budgets: resolveBudgets(manifest.agent.budgets, hostBudgets),
    connections: null,
    subagents: new Map(),
  };
  addChildren(root, manifest.subagents ?? [], sourceBundle.subagents ?? {}, tableInput, hostBudgets, manifest.agent.budgets, removedSlots(manifest.tools));
  return root;
}

function addChildren(
  parent: AgentProfile,
  entries: SubagentManifestEntry[],
  bundles: Record<string, SubagentBundle>,
  tableInput: ToolTableInput,
  hostBudgets: RunBudgets | undefined,
  /** The budgets the parent declared, over its ancestors'. */
  parentBudgets: RunBudgets | undefined,
  /** Built-in slots disableTool() removed at the parent or above it. */
  parentRemoved: ReadonlySet<string>,
): void {
  for (const entry of entries) {
    const bundle = bundles[entry.name];
    if (!bundle) {
      throw new AssemblyLineError("AL_ERR_SUBAGENT_DEFINITION", `the source bundle has no code for ${entry.dir}`, {
        fix: "Load the runtime with loadRuntimeBundle(artifactRoot), which loads every subagent's agent.ts and tools.",
      });
    }
    const path = parent.path ? `${parent.path}/${entry.name}` : entry.name;
    const removed = removedSlots(entry.tools, parentRemoved);
    const child: AgentProfile = {
      path,
      agentId: `${tableInput.manifest.agent.id}/${path}`,
      name: entry.name,
      description: entry.description,
      model: entry.model,
      modelInherited: entry.modelInherited,
      instructions: entry.instructions,
      context: undefined,
      defaultTools: null,
      table: subagentTable(parent.table, entry, bundle, tableInput, removed),
      skills: entry.skills,
      // Subagents do not author skills: self-improvement is a root agent policy.
      selfImprovement: { writable: false, writeApproval: false },
      outputSchema: entry.outputSchema,
      workspace: entry.workspace,
      // The manifest holds its budgets over its ancestors' already. Absent when none declares any, and in
      // a manifest built before subagents had budgets: either way the parent's bound its runs.
      budgets: resolveBudgets(entry.budgets ?? parentBudgets, hostBudgets),
      connections: new Set(entry.connections),
      subagents: new Map(),
    };
    addChildren(child, entry.subagents, bundle.subagents, tableInput, hostBudgets, entry.budgets ?? parentBudgets, removed);
    parent.subagents.set(entry.name, child);
  }
}

/**
 * A subagent's tools: the built-in slots as its parent has them (a parent's
 * override or disable carries down, so a child never widens), the parent tools
 * it named, and its own tools/. `removed`: the slots disabled at the subagent or
 * above it (removedSlots).
 */
function subagentTable(parentTable: ToolTable, entry: SubagentManifestEntry, bundle: SubagentBundle, tableInput: ToolTableInput, removed: ReadonlySet<string>): ToolTable {
  const own = buildToolTable({
    ...tableInput,
    manifest: {
      ...tableInput.manifest,
      agent: { ...tableInput.manifest.agent, defaultTools: null, selfImprovement: { writable: false, writeApproval: false } },
      tools: entry.tools,
      skills: entry.skills,
      subagents: entry.subagents,
    } satisfies AgentManifest,
    sourceBundle: { ...tableInput.sourceBundle, tools: bundle.tools, subagents: bundle.subagents } satisfies SourceBundle,
  });
  const table = new ToolTable({ coreToolPolicy: tableInput.coreToolPolicy, sandboxAvailable: tableInput.sandboxAvailable });
  for (const [name, tool] of own) {
    if (tool.origin !== "built-in") continue;
    const inherited = parentTable.get(name);
    // A slot the parent removed stays removed; one it replaced stays replaced. A parent without skills or
    // subagents has no load_skill or spawn_subagent: a child with them gets its own, unless disabled above.
    if (inherited && inherited.origin !== "authored") table.set(name, inherited);
    else if (!parentTable.has(name) && !removed.has(name) && (name === "load_skill" || name === "spawn_subagent")) table.set(name, tool);
  }
  // Parent tools it names are offered up front, but for a skill-only one, which comes with the skill that names it.
  for (const name of entry.inheritedTools) {
    const tool = parentTable.get(name);
    if (tool) table.set(name, { ...tool, defaultVisible: tool.mode !== "disabled" && tool.visibility !== "skill" && tool.visibility !== "hidden" });
  }
  for (const [name, tool] of own) if (tool.origin !== "built-in") table.set(name, tool);
  return table;
}

/** ctx.connections for a run of `profile`: every connection for the root, only the named ones for a subagent. */
export function connectionsOf(profile: AgentProfile, all: Record<string, ConnectionInfo>): Record<string, ConnectionInfo> {
  const allowed = profile.connections;
  if (allowed === null) return all;
  return Object.fromEntries(Object.entries(all).filter(([name]) => allowed.has(name)));
}

/**
 * The build checks a subagent's `connections: [...]` against the connections/
 * files only: a name beyond those must be one the host declares, or one a run
 * may add when dynamic connections are on. Refused when the runtime starts, so
 * a misspelt name never leaves a subagent quietly without its connection.
 */
export function refuseUnknownSubagentConnections(root: AgentProfile, declared: ReadonlySet<string>, dynamic: boolean): void {
  if (dynamic) return;
  for (const child of root.subagents.values()) {
    const unknown = [...(child.connections ?? [])].filter((name) => !declared.has(name));
    if (unknown.length === 0) continue;
    throw new AssemblyLineError(
      "AL_ERR_SUBAGENT_NARROWING",
      `subagents/${child.path}/agent.ts names connection${unknown.length > 1 ? "s" : ""} ${unknown.map((name) => `"${name}"`).join(", ")}, which neither connections/ nor the host declares`,
      {
        fix: `Name only the agent's connections (${[...declared].sort().join(", ") || "none"}): its connections/<name>.ts files and those the host's connections provider declares; or turn on dynamicConnections for connections runs add.`,
      },
    );
  }
}

/**
 * Connection tools reach the root's table (ConnectionRegistry.refresh); give
 * each subagent's table the tools of the connections it names, and only those,
 * taking back tools of connections that are gone. Call after every refresh.
 */
export function narrowConnectionTools(root: AgentProfile, all: Record<string, ConnectionInfo>): void {
  const visit = (parent: AgentProfile) => {
    for (const child of parent.subagents.values()) {
      const wanted = new Set(Object.values(connectionsOf(child, all)).flatMap((info) => info.tools));
      for (const [name, entry] of child.table) {
        if (entry.origin === "provided" && entry.provider === CONNECTION_TOOL_PROVIDER && !wanted.has(name)) child.table.delete(name);
      }
      for (const name of wanted) {
        const entry = root.table.get(name);
        const current = child.table.get(name);
        // A tool of the subagent's own by that name stays its own.
        if (entry && current !== entry && (current === undefined || current.provider === CONNECTION_TOOL_PROVIDER)) child.table.set(name, entry);
      }
      visit(child);
    }
  };
  visit(root);
}

/** The profile a run executes: the root's, or the subagent's its input names. */
export function profileOfRun(root: AgentProfile, run: RunRecord): AgentProfile {
  const path = run.input.parent?.subagent;
  if (!path) return root;
  let profile: AgentProfile | undefined = root;
  for (const name of path.split("/")) profile = profile?.subagents.get(name);
  if (!profile) {
    throw new AssemblyLineError("AL_ERR_SUBAGENT_NOT_FOUND", `run ${run.id} belongs to subagent "${path}", which this build does not have`, {
      fix: "Resume the run from a host running the build that spawned it.",
    });
  }
  return profile;
}

/** The agent ids of `root`'s subagents, nested ones included (`<agent id>/<path>`), as their runs carry them. */
export function subagentIdsOf(root: AgentProfile): string[] {
  return [...root.subagents.values()].flatMap((child) => [child.agentId, ...subagentIdsOf(child)]);
}
