import { AssemblyLineError, type CoreToolMode, type CoreToolPolicy } from "@assemblyline-agents/core";

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

/**
 * The policy's tool names that no tool of `tools` has: a misspelled name would leave the tool it meant
 * ungated. Names with `__` are a connection's tools, which may be added while a run goes on; `tools`
 * holds the built-ins' names too, since a host's policy for bash stands where an agent removed bash.
 */
export function unknownPolicyTools(policy: CoreToolPolicy, tools: ReadonlySet<string>): string[] {
  return Object.keys(policy).filter((name) => !name.includes("__") && !tools.has(name));
}
