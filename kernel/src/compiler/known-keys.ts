import { AssemblyLineError, type ErrorCode } from "@assemblyline-agents/core";

/**
 * The keys each authoring helper takes. Agent files are loaded without a type check
 * (and may be JavaScript), so a misspelled key reaches the compiler as an extra key:
 * `needApproval: true` would build a tool with no approval gate. The compiler refuses
 * any key not listed here, naming it and the keys that are.
 */
export const KNOWN_KEYS = {
  agent: ["id", "name", "description", "model", "instructions", "defaultTools", "context", "coreToolPolicy", "budgets", "selfImprovement", "dynamicAutomations", "dynamicConnections", "tools", "connections", "workspace", "outputSchema", "harness"],
  tool: ["description", "inputSchema", "outputSchema", "execute", "toModelOutput", "needsApproval", "defaultEnabled", "sideEffect", "capability"],
  // A provider helper (e.g. defineDiscordChannel) returns the definition with its module's functions on it.
  channel: ["transport", "route", "methods", "ingress", "normalizeHttp", "deliver", "deliverFailure", "resolveAttachment"],
  channelIngress: ["requiredSecretEnv"],
  automation: ["schedule", "message", "conversationId", "enabled"],
  dynamicAutomations: ["dynamic", "approval"],
  dynamicConnections: ["dynamic", "approval", "allowedHosts", "grants"],
  mcpConnection: ["kind", "description", "auth", "approval", "url", "command", "args", "env"],
  openapiConnection: ["kind", "description", "auth", "approval", "spec", "baseUrl"],
  httpConnection: ["kind", "description", "auth", "approval", "baseUrl", "endpoints"],
  instrumentation: ["serviceName", "captureContent", "setup"],
} as const satisfies Record<string, readonly string[]>;

/** Throw `code` naming the first key of `value` that `known` does not list (brand keys, `$$...`, are the helper's own). */
export function refuseUnknownKeys(value: unknown, known: readonly string[], where: string, code: ErrorCode): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return;
  const unknown = Object.keys(value).find((key) => !key.startsWith("$$") && !known.includes(key));
  if (unknown === undefined) return;
  throw new AssemblyLineError(code, `${where}: unknown key ${JSON.stringify(unknown)}`, { fix: `Use only ${known.join(", ")}.` });
}
