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
 * `where` names the file in errors ("skills/triage/SKILL.md"). `stored` reads
 * a file the skill store already holds, checked when it was written: one
 * written before the closing --- line was required is read as it was, not
 * refused (which would fail every run that lists the agent's skills).
 */
export function parseSkillFile(text: string, folderName: string, where: string, { stored = false } = {}): ParsedSkill {
  const refuse = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${where}: ${problem}`, { fix });
  };
  const unmarked = text.startsWith("\uFEFF") ? text.slice(1) : text;
  if (!unmarked.startsWith("---")) {
    refuse("has no front matter (a description is required)", "Start SKILL.md with ---\\ndescription: What the skill does and when to use it\\n---, then the procedure.");
  }
  // gray-matter ends front matter at the first later line that starts with ---; with none it reads
  // the rest of the file as YAML, and the procedure would be lost without a word.
  if (!stored && !unmarked.includes("\n---", 3)) {
    refuse("front matter has no closing --- line, so the whole file would be read as front matter and the procedure lost", "Add the closing --- line (a line of just ---) after the front matter, then write the procedure below it.");
  }
  let parsed: matter.GrayMatterFile<string>;
  try {
    parsed = parseFrontMatter(text);
  } catch (error) {
    if (error instanceof FrontMatterLanguageError) return refuse(error.message, "Write the front matter as YAML between plain --- lines.");
    return refuse(`front matter is not valid YAML: ${(error as Error).message}`, "Fix the YAML between the --- lines.");
  }
  const data = parsed.data as Record<string, unknown>;
  const description = data.description;
  if (description !== undefined && description !== null && typeof description !== "string") {
    refuse(`description must be text, but YAML reads it as ${yamlKind(description)}`, 'Quote the description: description: "What the skill does and when to use it".');
  }
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

/** What YAML made of an unquoted value that is not text (2024-01-01 a date, true a boolean, 42 a number). */
function yamlKind(value: unknown): string {
  if (value instanceof Date) return "a date";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "a mapping" : `a ${typeof value}`;
}

/** The digest of a skill folder's files: equal files, equal digest, on any machine. */
export function skillDigest(files: Record<string, string>): string {
  return `sha256:${digestJson(files)}`;
}
