import type { ToolDefinition, ToolExecution, ToolVisibility } from "@assemblyline-agents/core";

/** Where a table entry came from. `provided`: added from outside the agent folder (a plugin, a connection). */
export type ToolOrigin = "built-in" | "authored" | "override" | "provided";

/** A visibility after inference: `auto` never survives the table build. */
export type ResolvedVisibility = Exclude<ToolVisibility, "auto">;
export type ResolvedExecution = Exclude<ToolExecution, "auto">;

export interface VisibilityInput {
  origin: ToolOrigin;
  definition: Pick<ToolDefinition, "capability" | "defaultEnabled">;
  /** Whether agent.ts defaultTools lists the tool; null when agent.ts has no defaultTools. */
  listed: boolean | null;
}

/**
 * The inference rule, first match wins. Runs start with the core harness tools;
 * an authored tool is offered up front only when agent.ts `defaultTools` lists it,
 * `defaultEnabled` is true or `capability.visibility` is "always" (the capability
 * metadata that makes it visible). Other metadata (namespace, tags, aliases) on an
 * `auto` tool only helps `tool_search` find it.
 *  1. `hidden` and `skill` are kept as declared.
 *  2. A tool agent.ts `defaultTools` lists is visible (`always`).
 *  3. `defaultEnabled: true` is visible.
 *  4. `always` and `deferred` are kept as declared.
 *  5. `auto` with an agent.ts `defaultTools` that does not list it: deferred.
 *  6. `auto` with `defaultEnabled: false`: deferred.
 *  7. `auto` built-in tools and overrides of them: visible (core harness tools).
 *  8. `auto` tools provided from outside the agent folder (connections, plugins): deferred.
 *  9. `auto` authored tools (a subagent's own tools too): deferred, found through tool_search and run through tool_call.
 */
export function inferVisibility(input: VisibilityInput): { visibility: ResolvedVisibility; because: string } {
  const declared = input.definition.capability?.visibility ?? "auto";
  if (declared === "hidden" || declared === "skill") return { visibility: declared, because: `capability.visibility is "${declared}"` };
  if (input.listed === true) return { visibility: "always", because: "agent.ts defaultTools lists it" };
  if (input.definition.defaultEnabled === true) return { visibility: "always", because: "defaultEnabled is true" };
  if (declared === "always" || declared === "deferred") return { visibility: declared, because: `capability.visibility is "${declared}"` };
  if (input.listed === false) return { visibility: "deferred", because: "agent.ts defaultTools does not list it" };
  if (input.definition.defaultEnabled === false) return { visibility: "deferred", because: "defaultEnabled is false" };
  if (input.origin === "built-in" || input.origin === "override") return { visibility: "always", because: "core harness tool" };
  if (input.origin === "provided") return { visibility: "deferred", because: "provided from outside the agent folder" };
  return { visibility: "deferred", because: "authored tool on auto" };
}

/**
 * Why a `defaultTools` list (agent.ts or a resolver's) may not name a skill-only
 * tool: `visibility: "skill"` says the tool comes with its skill, and the list
 * says it is there from the start; neither may silently win over the other.
 */
export function listedSkillToolProblem(name: string): string {
  return `"${name}" is available only while a skill is active; remove it from defaultTools or drop visibility: "skill"`;
}

/**
 * `execution: auto` means: built-ins keep what their slot needs (the file tools
 * run on the runtime filesystem without a sandbox, `bash` needs one); every
 * other tool runs in the trusted app runtime (`direct`).
 */
export function inferExecution(definition: Pick<ToolDefinition, "capability">): ResolvedExecution {
  const declared = definition.capability?.execution ?? "auto";
  return declared === "auto" ? "direct" : declared;
}

const VISIBILITIES = new Set(["auto", "always", "deferred", "skill", "hidden"]);
const EXECUTIONS = new Set(["auto", "direct", "sandbox", "both"]);
const WORD = /^[a-z0-9][a-z0-9_-]*$/;

/** What is wrong with a tool's capability block and defaultEnabled, or null. */
export function capabilityProblem(definition: Pick<ToolDefinition, "capability" | "defaultEnabled">): string | null {
  const capability = definition.capability;
  if (definition.defaultEnabled !== undefined && typeof definition.defaultEnabled !== "boolean") return "defaultEnabled must be true or false";
  if (capability === undefined) return null;
  if (typeof capability !== "object" || capability === null || Array.isArray(capability)) return "capability must be an object";
  const known = new Set(["visibility", "execution", "namespace", "tags", "aliases"]);
  const unknown = Object.keys(capability).filter((key) => !known.has(key));
  if (unknown.length) return `capability has unknown key(s) ${unknown.join(", ")} (allowed: ${[...known].join(", ")})`;
  if (capability.visibility !== undefined && !VISIBILITIES.has(capability.visibility)) {
    return `capability.visibility ${JSON.stringify(capability.visibility)} is not one of ${[...VISIBILITIES].join(", ")}`;
  }
  if (capability.execution !== undefined && !EXECUTIONS.has(capability.execution)) {
    return `capability.execution ${JSON.stringify(capability.execution)} is not one of ${[...EXECUTIONS].join(", ")}`;
  }
  if (capability.namespace !== undefined && (typeof capability.namespace !== "string" || !WORD.test(capability.namespace))) {
    return `capability.namespace ${JSON.stringify(capability.namespace)} must be a lowercase word (a-z, 0-9, _ or -)`;
  }
  for (const field of ["tags", "aliases"] as const) {
    const list = capability[field];
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.some((item) => typeof item !== "string" || !WORD.test(item))) {
      return `capability.${field} must be an array of lowercase words (a-z, 0-9, _ or -)`;
    }
  }
  if (definition.defaultEnabled === true && (capability.visibility === "hidden" || capability.visibility === "skill")) {
    return `defaultEnabled: true contradicts capability.visibility "${capability.visibility}"`;
  }
  // The other way round too: one keeps the tool back, the other offers it up front, and neither may silently win.
  if (definition.defaultEnabled === false && capability.visibility === "always") {
    return `defaultEnabled: false contradicts capability.visibility "always"; drop defaultEnabled: false to offer the tool up front, or use visibility "deferred" to keep it back`;
  }
  return null;
}
