import type matter from "gray-matter";
import { AssemblyLineError, isSkillName } from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";
import { FrontMatterLanguageError, parseFrontMatter } from "./front-matter.js";

/** What a SKILL.md says: front matter (description, name, tools) and the procedure body. */
export interface ParsedSkill {
  name: string;
  description: string;
  tools: string[];
  body: string;
}

/**
 * Parse SKILL.md: YAML front matter through gray-matter, `description`
 * required, `name` defaulting to the folder's name, `tools` optional.
 * `where` names the file in errors ("skills/triage/SKILL.md").
 */
export function parseSkillFile(text: string, folderName: string, where: string): ParsedSkill {
  const refuse = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${where}: ${problem}`, { fix });
  };
  let parsed: matter.GrayMatterFile<string>;
  try {
    parsed = parseFrontMatter(text);
  } catch (error) {
    if (error instanceof FrontMatterLanguageError) return refuse(error.message, "Write the front matter as YAML between plain --- lines.");
    return refuse(`front matter is not valid YAML: ${(error as Error).message}`, "Fix the YAML between the --- lines.");
  }
  if (!/^\uFEFF?---/.test(text)) {
    refuse("has no front matter (a description is required)", "Start SKILL.md with ---\\ndescription: What the skill does and when to use it\\n---, then the procedure.");
  }
  const data = parsed.data as Record<string, unknown>;
  const description = data.description;
  if (typeof description !== "string" || description.trim() === "") {
    refuse("front matter has no description", "Start SKILL.md with ---\\ndescription: What the skill does and when to use it\\n---.");
  }
  const name = data.name === undefined ? folderName : data.name;
  if (typeof name !== "string" || !isSkillName(name)) {
    refuse(`name ${JSON.stringify(name)} is not a skill name`, "Use lower-case letters, digits, '.', '_' or '-' (or leave name out to use the folder's name).");
  }
  const tools = data.tools === undefined ? [] : data.tools;
  if (!Array.isArray(tools) || tools.some((tool) => typeof tool !== "string" || tool === "")) {
    refuse("tools must be a list of tool names", "Write tools: [tool_a, tool_b] in the front matter.");
  }
  const known = new Set(["description", "name", "tools"]);
  const unknown = Object.keys(data).filter((key) => !known.has(key));
  // eve skills may carry extra keys (license, metadata, ...); they are kept in the file but have no effect.
  void unknown;
  return { name: name as string, description: (description as string).trim(), tools: tools as string[], body: parsed.content.replace(/^\n+/, "") };
}

/** The digest of a skill folder's files: equal files, equal digest, on any machine. */
export function skillDigest(files: Record<string, string>): string {
  return `sha256:${digestJson(files)}`;
}
