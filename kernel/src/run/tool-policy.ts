import { AssemblyLineError, BUILT_IN_TOOL_NAMES, type CoreToolMode, type CoreToolPolicy } from "@assemblyline-agents/core";

const MODES: readonly CoreToolMode[] = ["enabled", "approval", "disabled"];

export function isToolMode(value: unknown): value is CoreToolMode {
  return MODES.includes(value as CoreToolMode);
}

/**
 * A coreToolPolicy as given (agent.ts, RuntimeOptions), checked: an object of tool name to mode. A
 * misspelled mode must not pass, since the table reads anything but "approval" and "disabled" as
 * enabled: `send_email: "aproval"` would leave the tool without its approval gate.
 */
export function checkToolPolicy(policy: unknown, where: string): CoreToolPolicy {
  if (policy === undefined) return {};
  if (typeof policy !== "object" || policy === null || Array.isArray(policy)) {
    throw new AssemblyLineError("AL_ERR_TOOL_POLICY", `${where} must be an object of tool name to mode`, { fix: 'Write e.g. coreToolPolicy: { bash: "approval", write: "disabled" }.' });
  }
  for (const [name, mode] of Object.entries(policy)) {
    if (!isToolMode(mode)) {
      throw new AssemblyLineError("AL_ERR_TOOL_POLICY", `${where}: ${name} has mode ${JSON.stringify(mode)}, which is not one of ${MODES.join(", ")}`, {
        fix: `Set ${name} to "enabled", "approval" or "disabled".`,
      });
    }
  }
  return policy as CoreToolPolicy;
}

/** A table of tools by name, and the tables of an agent's subagents: what a policy's names are looked up in. */
interface PolicyScope {
  table: { names(): string[] };
  subagents: ReadonlyMap<string, PolicyScope>;
}

/**
 * Refuse a policy naming a tool that no table of the agent or of its subagents has: a misspelled name
 * would leave the tool it meant ungated. Built-ins pass, since a host's policy for bash stands where an
 * agent removed bash; so do names with `__`, a connection's tools, which may be added while a run goes on.
 */
export function refuseUnknownPolicyTools(policy: CoreToolPolicy, root: PolicyScope): void {
  const known = new Set<string>(BUILT_IN_TOOL_NAMES);
  const collect = (scope: PolicyScope) => {
    for (const name of scope.table.names()) known.add(name);
    for (const child of scope.subagents.values()) collect(child);
  };
  collect(root);
  const unknown = Object.keys(policy).filter((name) => !name.includes("__") && !known.has(name));
  if (unknown.length === 0) return;
  throw new AssemblyLineError("AL_ERR_TOOL_POLICY", `coreToolPolicy names ${unknown.map((name) => JSON.stringify(name)).join(", ")}, which this agent has no tool of`, {
    fix: `Name tools this agent or one of its subagents has (built-ins, tools/, plugin-provided; connection tools as <connection>__<tool>): ${[...known].sort().join(", ")}.`,
  });
}
