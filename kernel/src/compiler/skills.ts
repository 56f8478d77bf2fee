import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";
import { parseSkillFile, skillDigest } from "../skills/skill-file.js";
import type { SkillManifestEntry } from "./manifest.js";

/**
 * Compile `<dir>/skills/<name>/SKILL.md` folders (eve's layout): SKILL.md's front
 * matter, and the text of every file of the folder (references/, ...) to seed
 * the skill store. `prefix` is the folder's path from the root agent folder.
 * `toolNames` are the tools this agent has; a skill may activate only those.
 */
export async function compileSkills(dir: string, prefix: string, toolNames: ReadonlySet<string>): Promise<SkillManifestEntry[]> {
  const skillsDir = join(dir, "skills");
  if (!existsSync(skillsDir)) return [];
  const entries: SkillManifestEntry[] = [];
  const seen = new Map<string, string>();
  for (const folder of (await readdir(skillsDir, { withFileTypes: true })).filter((entry) => entry.isDirectory() && !entry.name.startsWith(".")).map((entry) => entry.name).sort()) {
    const where = `${prefix}skills/${folder}`;
    const folderPath = join(skillsDir, folder);
    if (!existsSync(join(folderPath, "SKILL.md"))) {
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${where}/ has no SKILL.md`, {
        fix: "Each folder under skills/ is one skill: add SKILL.md with a description front matter, or remove the folder.",
      });
    }
    const files: Record<string, string> = {};
    for (const file of await listFiles(folderPath)) {
      files[file] = (await readFile(join(folderPath, file), "utf8")).replace(/\r\n/g, "\n");
    }
    const parsed = parseSkillFile(files["SKILL.md"]!, folder, `${where}/SKILL.md`);
    const unknownTools = parsed.tools.filter((tool) => !toolNames.has(tool));
    if (unknownTools.length > 0) {
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${where}/SKILL.md activates ${unknownTools.map((tool) => `"${tool}"`).join(", ")}, which this agent does not have`, {
        fix: `Name tools of this agent (${[...toolNames].sort().join(", ") || "none"}), or add tools/<name>.ts.`,
      });
    }
    const taken = seen.get(parsed.name);
    if (taken) {
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${where}/SKILL.md and ${taken}/SKILL.md are both named "${parsed.name}"`, {
        fix: "Give each skill its own name (or leave name out to use the folder's).",
      });
    }
    seen.set(parsed.name, where);
    entries.push({ name: parsed.name, description: parsed.description, tools: parsed.tools, dir: where, files, digest: skillDigest(files) });
  }
  return entries;
}

async function listFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  async function walk(dir: string): Promise<void> {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.name.startsWith(".")) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) files.push(relative(root, path).split(sep).join("/"));
    }
  }
  await walk(root);
  return files.sort();
}
