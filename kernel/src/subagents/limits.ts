/** How far and how wide subagents may spawn (RuntimeOptions.subagents, env). */
export interface SubagentLimits {
  /** Deepest nesting: 1 lets the root agent spawn children that cannot spawn again. Default 3. */
  maxDepth: number;
  /** Spawns one run may make. Default 16. */
  maxSpawnsPerRun: number;
}

export const DEFAULT_SUBAGENT_LIMITS: SubagentLimits = { maxDepth: 3, maxSpawnsPerRun: 16 };
