/**
 * How far and how wide subagents may spawn (RuntimeOptions.subagents, else the env variables
 * ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH and ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS). Both take 0, so
 * an operator can turn subagents off without a code change.
 */
export interface SubagentLimits {
  /** Deepest nesting: 1 lets the root agent spawn children that cannot spawn again; 0, no subagents at all. Default 3. */
  maxDepth: number;
  /** Spawns one run may make; 0, none. Default 16. */
  maxSpawnsPerRun: number;
}

export const DEFAULT_SUBAGENT_LIMITS: SubagentLimits = { maxDepth: 3, maxSpawnsPerRun: 16 };

/**
 * `RuntimeOptions.subagents` as given, checked: a misspelt key would be ignored and NaN compares
 * false with every count, and either would leave spawning unlimited. A TypeError, as for the
 * runtime's other whole-number options.
 */
export function checkSubagentLimitsOption(value: unknown): Partial<SubagentLimits> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`RuntimeOptions.subagents must be an object { maxDepth, maxSpawnsPerRun }, not ${value === null ? "null" : Array.isArray(value) ? "a list" : typeof value}`);
  }
  const names = Object.keys(DEFAULT_SUBAGENT_LIMITS) as Array<keyof SubagentLimits>;
  const unknown = Object.keys(value).filter((key) => !(names as string[]).includes(key));
  if (unknown.length > 0) {
    throw new TypeError(`RuntimeOptions.subagents has unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}; use ${names.join(", ")}`);
  }
  const limits = value as Record<string, unknown>;
  for (const name of names) {
    const limit = limits[name];
    if (limit !== undefined && !(typeof limit === "number" && Number.isSafeInteger(limit) && limit >= 0)) {
      throw new TypeError(`RuntimeOptions.subagents.${name} is ${String(limit)}; give a whole number, 0 or more (default ${DEFAULT_SUBAGENT_LIMITS[name]}), or leave it out`);
    }
  }
  return limits as Partial<SubagentLimits>;
}
