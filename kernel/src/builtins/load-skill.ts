import { defineTool, isAssemblyLineError } from "@assemblyline-agents/core";
import { skillActivationOf } from "../run/run-access.js";
import { boundedProcedure } from "../skills/skill-procedure-cap.js";

interface LoadedSkill {
  name: string;
  description: string;
  instructions: string;
  /** Resource files of the skill, readable with the read tool. */
  resources: string[];
  /** Tools the skill made available. */
  activatedTools: string[];
  /** Tools the skill names that this run cannot offer (gone from the agent, left out by a resolver, disabled by the host, or needing a sandbox the host lacks): its steps that need them cannot be followed. */
  unavailableTools?: string[];
}

/**
 * Activate a skill for the rest of the run: its procedure comes back as the
 * result, up to LOAD_SKILL_MAX_CHARS (and stays in the context on resumes),
 * and the tools it names are offered from now on.
 */
export const loadSkillTool = defineTool<{ name: string }, LoadedSkill | { error: string; code: string }>({
  description: "Load a skill by name (see the Skills catalog): returns its procedure and makes the tools it needs available. Load a skill before following it.",
  inputSchema: { type: "object", properties: { name: { type: "string", minLength: 1 } }, required: ["name"], additionalProperties: false },
  sideEffect: "none",
  capability: { execution: "direct" },
  async execute(input, ctx) {
    try {
      const { skill, unavailableTools } = await skillActivationOf(ctx).load(input.name);
      return {
        name: skill.name,
        description: skill.description,
        instructions: boundedProcedure(skill.name, skill.body),
        resources: Object.keys(skill.files).filter((path) => path !== "SKILL.md").map((path) => `/skills/${skill.name}/${path}`),
        activatedTools: skill.tools.filter((tool) => !unavailableTools.includes(tool)),
        ...(unavailableTools.length > 0 ? { unavailableTools } : {}),
      };
    } catch (error) {
      // An unknown name is the model's mistake: it can pick another from the catalog.
      if (isAssemblyLineError(error, "AL_ERR_SKILL_NOT_FOUND")) return { error: error.message, code: error.code };
      throw error;
    }
  },
});
