import { AssemblyLineError } from "../errors.js";
import { holdsControlCharacter } from "../text.js";
import type { SkillRecord } from "./skills.js";

const SKILL_NAME = /^[a-z0-9][a-z0-9._-]*$/;

/**
 * The one shape check every SkillStore runs before writing, so a bad record is
 * refused the same way by each store and never reaches storage.
 */
export function checkSkillRecord(record: SkillRecord, operation = "putSkill"): void {
  const refuse = (problem: string): never => {
    throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `${operation}: ${problem}`, {
      fix: "Pass a SkillRecord with agentId, a lower-case name, files holding SKILL.md (text values) and a digest.",
    });
  };
  if (typeof record !== "object" || record === null) refuse("record must be an object");
  checkSkillKey(record.agentId, record.name, operation);
  if (typeof record.files !== "object" || record.files === null || Array.isArray(record.files)) refuse("files must be an object of path -> text");
  if (typeof record.files["SKILL.md"] !== "string") refuse(`skill "${record.name}" has no SKILL.md`);
  for (const [path, text] of Object.entries(record.files)) {
    if (typeof text !== "string") refuse(`files["${path}"] is not text`);
    const problem = skillFilePathProblem(path);
    if (problem) refuse(`file path ${JSON.stringify(path)} is not a relative path inside the skill folder: ${problem}`);
  }
  if (typeof record.digest !== "string" || record.digest === "") refuse("digest must be a non-empty string");
  if (record.seedDigest !== null && typeof record.seedDigest !== "string") refuse("seedDigest must be a string or null");
  if (!["seed", "agent", "user"].includes(record.changedBy)) refuse(`changedBy ${JSON.stringify(record.changedBy)} is not seed, agent or user`);
}

export function checkSkillKey(agentId: unknown, name: unknown, operation: string): void {
  if (typeof agentId !== "string" || agentId === "") {
    throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `${operation}: agentId must be a non-empty string`, { fix: "Pass the agent's id." });
  }
  if (typeof name !== "string" || !SKILL_NAME.test(name)) {
    throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `${operation}: skill name ${JSON.stringify(name)} must be lower-case letters, digits, '.', '_' or '-'`, {
      fix: "Name skills like their folder under skills/, e.g. release-notes.",
    });
  }
}

/** A posix path below the skill folder: no leading slash, no '..', no empty segment, no control character. */
export function isSkillFilePath(path: string): boolean {
  return skillFilePathProblem(path) === null;
}

/** Why `path` cannot name a file inside a skill folder (the rule it breaks), or null when it can. */
export function skillFilePathProblem(path: string): string | null {
  if (path === "") return "it is empty";
  if (path.startsWith("/")) return "it starts with '/' (a resource path is relative to the skill folder)";
  if (path.includes("\\")) return "it holds '\\' (separate folders with '/')";
  // The runtime filesystem refuses such a path: the file could be neither read nor deleted, and `list` would print it as lines of its own.
  if (holdsControlCharacter(path)) return "it holds a control character (a newline, a tab, U+2028, ...), which no file tool can name";
  if (path.split("/").some((segment) => segment === "" || segment === "." || segment === "..")) return "it has an empty, '.' or '..' part";
  return null;
}

export function isSkillName(name: string): boolean {
  return SKILL_NAME.test(name);
}
