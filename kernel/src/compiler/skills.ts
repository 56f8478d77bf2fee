import { existsSync } from "node:fs";
import type { Dirent } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { AssemblyLineError, escapedControlCharacters, skillFilePathProblem } from "@assemblyline-agents/core";
import { parseSkillFile, skillDigest } from "../skills/skill-file.js";
import type { SkillManifestEntry } from "./manifest.js";

/**
 * Compile `<dir>/skills/<name>/SKILL.md` folders (eve's layout): SKILL.md's front
 * matter, and the text of every file of the folder (references/, ...) to seed
 * the skill store. `prefix` is the folder's path from the root agent folder.
 * `toolNames` are the tools this agent has; a skill may activate only those.
 * `removed` are the built-ins disableTool() took away from it (named in the refusal).
 */
export async function compileSkills(dir: string, prefix: string, toolNames: ReadonlySet<string>, removed: ReadonlySet<string> = new Set()): Promise<SkillManifestEntry[]> {
  const skillsDir = join(dir, "skills");
  if (!existsSync(skillsDir)) return [];
  const entries: SkillManifestEntry[] = [];
  const seen = new Map<string, string>();
  const listed = (await readdir(skillsDir, { withFileTypes: true })).filter((entry) => !entry.name.startsWith("."));
  refuseLooseEntries(listed, `${prefix}skills`);
  for (const folder of listed.filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort()) {
    const where = `${prefix}skills/${folder}`;
    const folderPath = join(skillsDir, folder);
    if (!existsSync(join(folderPath, "SKILL.md"))) {
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${where}/ has no SKILL.md`, {
        fix: "Each folder under skills/ is one skill: add SKILL.md with a description front matter, or remove the folder.",
      });
    }
    const files: Record<string, string> = {};
    for (const file of await listFiles(folderPath, where)) {
      files[file] = readText(await readFile(join(folderPath, file)), `${where}/${file}`).replace(/\r\n/g, "\n");
    }
    const parsed = parseSkillFile(files["SKILL.md"]!, folder, `${where}/SKILL.md`);
    const unknownTools = parsed.tools.filter((tool) => !toolNames.has(tool));
    if (unknownTools.length > 0) {
      const disabled = unknownTools.filter((tool) => removed.has(tool)).map((tool) => `"${tool}"`).join(", ");
      const missing = unknownTools.filter((tool) => !removed.has(tool));
      const fixes = [
        missing.length > 0 ? `Name tools of this agent (${[...toolNames].sort().join(", ") || "none"}), or add tools/<name>.ts.` : "",
        disabled ? `Take ${disabled} out of the skill's tools, or keep the built-in: delete the tools/<name>.ts that exports disableTool() (in this agent or one above it), or override it in this agent's tools/.` : "",
      ];
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${where}/SKILL.md activates ${unknownTools.map((tool) => `"${tool}"`).join(", ")}, which this agent does not have${disabled ? ` (disableTool() removes ${disabled})` : ""}`, {
        fix: fixes.filter(Boolean).join(" "),
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

/** What may sit in skills/ beside the skill folders: a note about them. Dotfiles (.gitkeep) are passed over as well. */
const SKILLS_README = /^readme\.md$/i;

/**
 * Refuses what skills/ holds other than skill folders, which the build would leave out without a word:
 * a skill written as a file (skills/SKILL.md, skills/deploy.md) or a link to a folder elsewhere.
 */
function refuseLooseEntries(listed: Dirent[], skillsPath: string): void {
  for (const entry of listed) {
    if (entry.isDirectory() || (entry.isFile() && SKILLS_README.test(entry.name))) continue;
    const shown = `${skillsPath}/${entry.name}`;
    if (entry.isSymbolicLink()) {
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${shown} is a symbolic link`, {
        fix: `Put the skill's folder itself in ${skillsPath}/ (skills are copied into the build and the skill store).`,
      });
    }
    throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${shown}: a skill is a folder (${skillsPath}/<name>/SKILL.md), not a file`, {
      fix:
        entry.name === "SKILL.md"
          ? `Move it to ${skillsPath}/<name>/SKILL.md, the folder named for the skill.`
          : `Move it into its skill's folder (${skillsPath}/<name>/), or out of ${skillsPath}/: only skill folders, README.md and dotfiles may be there.`,
    });
  }
}

/** The skill's files, as paths relative to its folder. `where` names the folder in errors. */
async function listFiles(root: string, where: string): Promise<string[]> {
  const files: string[] = [];
  async function walk(dir: string): Promise<void> {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.name.startsWith(".")) continue;
      const path = join(dir, entry.name);
      const shown = `${where}/${relative(root, path).split(sep).join("/")}`;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) files.push(storablePath(relative(root, path).split(sep).join("/"), shown));
      // A link may lead anywhere on the building machine, whose file would be copied into the build.
      else {
        throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${shown} is ${entry.isSymbolicLink() ? "a symbolic link" : "not a regular file"}`, {
          fix: "Put the file itself in the skill's folder (skills are copied into the build and the skill store).",
        });
      }
    }
  }
  await walk(root);
  return files.sort();
}

/** A skill file's path as the skill store checks it (checkSkillRecord): one it refuses would fail every run that seeds the skill. */
function storablePath(file: string, shown: string): string {
  const problem = skillFilePathProblem(file);
  if (problem === null) return file;
  throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${escapedControlCharacters(shown)}: "${escapedControlCharacters(file)}" is not a file path the skill store can hold: ${problem}`, {
    fix: "Rename the file without '\\' (Windows reads it as a folder separator) or control characters such as a newline or a tab (no file tool can name them); to put it in a folder, make a subfolder.",
  });
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** A skill file's text: the skill store holds text, so a file that is not UTF-8 (an image, a PDF) would come out corrupted. */
function readText(bytes: Buffer, shown: string): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `${shown} is not UTF-8 text`, {
      fix: "Skills hold text files (Markdown, code, data as text): keep binary files elsewhere, e.g. in /files through the blob store, and refer to them.",
    });
  }
}
