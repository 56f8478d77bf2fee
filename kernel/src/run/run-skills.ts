import { AssemblyLineError } from "@assemblyline-agents/core";
import type { SkillLibrary, SkillView } from "../skills/skill-library.js";
import type { SkillActivation } from "./run-access.js";
import { reachableThroughBridge } from "./bridge-tools.js";
import type { RunScope } from "./run-scope.js";
import { activateTools } from "./tool-activation.js";

/**
 * What load_skill reaches in one run: records the skill as loaded and offers its
 * tools. A class, not an object literal, for the reason DriveScope gives.
 */
export class RunSkills implements SkillActivation {
  constructor(
    private readonly library: SkillLibrary,
    /** The run's scope, made after this (it holds this). */
    private readonly scopeOf: () => RunScope,
    /** Whether a resolver's defaultTools bound the run's tools (run.started `defaultTools`). */
    private readonly resolverBoundTools = false,
  ) {}

  async load(name: string): Promise<{ skill: SkillView; unavailableTools: string[] }> {
    const skill = await this.library.get(name);
    if (!skill) {
      throw new AssemblyLineError("AL_ERR_SKILL_NOT_FOUND", `no skill "${name}"`, {
        fix: `Load one of: ${(await this.library.list()).map((entry) => entry.name).join(", ") || "(none)"}.`,
      });
    }
    const scope = this.scopeOf();
    // The build checks a folder skill's tools; a skill the agent wrote, kept across builds, may name a tool a later build dropped.
    const offerable = (tool: string) => {
      const entry = scope.table.get(tool);
      if (entry === undefined || entry.visibility === "hidden" || entry.bridge) return false;
      // activateTools passes over these: listed as activated, the model would call them and be refused.
      if (entry.mode === "disabled" || !entry.available) return false;
      // Under a resolver's defaultTools a skill adds its skill-only tools and what the run reaches anyway (offered,
      // or deferred behind an offered tool_call or tool_describe), never a tool the resolver left out.
      if (!this.resolverBoundTools || entry.visibility === "skill" || scope.visible.has(tool)) return true;
      return (scope.visible.has("tool_call") || scope.visible.has("tool_describe")) && reachableThroughBridge(scope, entry);
    };
    const unavailableTools = skill.tools.filter((tool) => !offerable(tool));
    await scope.journal.record(scope.runId, "skill.loaded", { name: skill.name, digest: skill.digest, tools: skill.tools });
    await activateTools(scope, skill.tools.filter(offerable), `skill:${skill.name}`);
    return { skill, unavailableTools };
  }
}
