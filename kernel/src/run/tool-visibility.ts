import type { ToolDefinition, ToolExecution, ToolVisibility } from "@assemblyline-agents/core";

/** Where a table entry came from. `provided`: added from outside the agent folder (a plugin, a connection). */
export type ToolOrigin = "built-in" | "authored" | "override" | "provided";

/** A visibility after inference: `auto` never survives the table build. */
export type ResolvedVisibility = Exclude<ToolVisibility, "auto">;
export type ResolvedExecution = Exclude<ToolExecution, "auto">;

/**
 * With at most this many authored tools left on `auto`, all of them are visible
 * up front; with more, all of them are deferred behind `tool_search`. All or
 * nothing, so adding one tool never silently reshuffles which others are shown.
 */
export const AUTO_VISIBLE_LIMIT = 10;

export interface VisibilityInput {
  origin: ToolOrigin;
  definition: Pick<ToolDefinition, "capability" | "defaultEnabled">;
  /** Whether agent.ts defaultTools lists the tool; null when agent.ts has no defaultTools. */
  listed: boolean | null;
  /** How many authored tools reach the last rule (`auto`, no defaultEnabled, no defaultTools list). */
  authoredAutoCount: number;
}

/**
 * The inference rule, first match wins:
 *  1. `hidden` and `skill` are kept as declared.
 *  2. A tool agent.ts `defaultTools` lists is visible (`always`).
 *  3. `defaultEnabled: true` is visible.
 *  4. `always` and `deferred` are kept as declared.
 *  5. `auto` with an agent.ts `defaultTools` that does not list it: deferred.
 *  6. `auto` with `defaultEnabled: false`: deferred.
 *  7. `auto` built-in tools and overrides of them: visible (core harness tools).
 *  8. `auto` tools provided from outside the agent folder (connections, plugins): deferred.
 *  9. `auto` authored tools: visible when the agent has at most AUTO_VISIBLE_LIMIT of them, else deferred.
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
  return input.authoredAutoCount <= AUTO_VISIBLE_LIMIT
    ? { visibility: "always", because: `one of ${input.authoredAutoCount} auto tools (at most ${AUTO_VISIBLE_LIMIT} are shown up front)` }
    : { visibility: "deferred", because: `one of ${input.authoredAutoCount} auto tools (more than ${AUTO_VISIBLE_LIMIT} are deferred)` };
}

/** Whether an authored tool reaches rule 9 (counted against AUTO_VISIBLE_LIMIT). */
export function reachesAutoCount(definition: Pick<ToolDefinition, "capability" | "defaultEnabled">, listed: boolean | null): boolean {
  const declared = definition.capability?.visibility ?? "auto";
  return declared === "auto" && definition.defaultEnabled === undefined && listed === null;
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
  return null;
}
