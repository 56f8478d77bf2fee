import { AssemblyLineError, type AgentDefinition, type ErrorCode } from "@assemblyline-agents/core";

/**
 * agent.ts is loaded without a type check (and may be JavaScript), so a field of the
 * wrong type reaches the compiler as it is: `instructions: ["..."]` would reach the
 * model as a list, `dynamicAutomations: true` would build as off. Each field the
 * compiler reads as it is gets its type checked here; the nested policies
 * (budgets, selfImprovement, coreToolPolicy, ...) are checked where they are compiled.
 */
const FIELD_TYPES: ReadonlyArray<{ key: keyof AgentDefinition; rule: string; ok(value: unknown): boolean; fix: string }> = [
  { key: "model", rule: 'a "provider/model" string', ok: (value) => typeof value === "string" && value.trim() !== "", fix: 'Set model: "provider/model", e.g. "openai/gpt-5.4-mini".' },
  { key: "instructions", rule: "a string", ok: (value) => typeof value === "string", fix: 'Write instructions: "..." as one string (join lines with "\\n"), or put them in instructions.md.' },
  // Subagent runs use `<root id>/<path>` as their agent id: a slash in the root's would read as a subagent.
  { key: "id", rule: 'a non-empty string without "/"', ok: (value) => typeof value === "string" && value.trim() !== "" && !value.includes("/"), fix: 'Write e.g. id: "support-bot", or leave it out to use the folder\'s name.' },
  { key: "name", rule: "a non-empty string", ok: (value) => typeof value === "string" && value.trim() !== "", fix: 'Write e.g. name: "Support", or leave it out to use the id.' },
  { key: "description", rule: "a string", ok: (value) => typeof value === "string", fix: 'Write description: "What the agent does".' },
  { key: "defaultTools", rule: "a list of tool names", ok: (value) => Array.isArray(value) && value.every((name) => typeof name === "string" && name !== ""), fix: 'Write defaultTools: ["read", "record_note"].' },
  { key: "dynamicAutomations", rule: "an object", ok: isPlainObject, fix: "Write dynamicAutomations: { dynamic: true, approval: false }." },
  { key: "dynamicConnections", rule: "an object", ok: isPlainObject, fix: 'Write dynamicConnections: { dynamic: true, approval: true, allowedHosts: ["mcp.example.com"] }.' },
];

/** Throw `code` naming the first field of agent.ts (at `where`) whose value has the wrong type; a root agent must set model. */
export function checkAgentFieldTypes(agent: AgentDefinition, where: string, code: ErrorCode, options: { root: boolean }): void {
  for (const field of FIELD_TYPES) {
    const value = agent[field.key];
    if (value === undefined && !(options.root && field.key === "model")) continue;
    if (field.ok(value)) continue;
    throw new AssemblyLineError(code, value === undefined ? `${where} has no ${field.key}` : `${where}: ${field.key} must be ${field.rule}, not ${shown(value)}`, { fix: field.fix });
  }
}

function isPlainObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function shown(value: unknown): string {
  if (typeof value === "function") return "a function";
  try {
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return String(value);
  }
}
