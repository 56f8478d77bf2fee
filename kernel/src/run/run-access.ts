import { AssemblyLineError, type ToolExecutionContext } from "@assemblyline-agents/core";
import type { SkillView } from "../skills/skill-library.js";

/**
 * What the built-in load_skill reaches through its tool context. A symbol key,
 * like the runtime filesystem's, so a wrapper that passes its ctx on keeps it
 * and it never shows in JSON.
 */
export const SKILL_ACTIVATION = Symbol.for("assembly-line.skill-activation");

export interface SkillActivation {
  /**
   * Record the skill as active for the run (durably), offer the tools it activates, and return it
   * with the tools it names that this build cannot offer (a skill the agent wrote may outlive them).
   */
  load(name: string): Promise<{ skill: SkillView; unavailableTools: string[] }>;
}

export function skillActivationOf(ctx: ToolExecutionContext): SkillActivation {
  const access = (ctx as unknown as Record<symbol, SkillActivation | undefined>)[SKILL_ACTIVATION];
  if (!access) {
    throw new AssemblyLineError("AL_ERR_SKILL_NOT_FOUND", "this tool context has no skills", { fix: "Call load_skill with the ctx your execute received." });
  }
  return access;
}
