import { existsSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** The extensions the compiler loads an agent-folder part from. */
export const SOURCE_EXTENSIONS = [".ts", ".mts", ".js", ".mjs"] as const;
/** Code the loader could run but the compiler never looks for: such a file would be left out without a word. */
export const SKIPPED_CODE = /\.(cts|cjs|tsx|jsx|mtsx|ctsx)$/;
export const DECLARATIONS = /\.d\.[cm]?ts$/;

/** What a file of each part is, for messages: `tools/echo.ts` is the tool "echo". */
const ROOT_FILE_ROLE: Record<string, string> = {
  agent: "the agent definition",
  sandbox: "the sandbox",
  gateway: "the gateway",
  resolvers: "the run resolver",
  context: "the context policy",
  instrumentation: "the instrumentation",
};

export function stemOf(file: string): string {
  return basename(file).replace(/\.(ts|mts|js|mjs)$/, "");
}

/**
 * The file of `<prefix><stem>.{ts,mts,js,mjs}` under `rootDir` (e.g. `agent.ts`), without the prefix.
 * Two of them (agent.ts and a compiled agent.js) are refused: the build would pick one.
 */
export function findSource(rootDir: string, stem: string, prefix = ""): string | undefined {
  const found = SOURCE_EXTENSIONS.map((ext) => stem + ext).filter((file) => existsSync(join(rootDir, prefix, file)));
  if (found.length > 1) {
    const [first, second] = found.map((file) => `${prefix}${file}`).sort();
    throw new AssemblyLineError("AL_ERR_AGENT_FOLDER", `${first} and ${second} are both ${ROOT_FILE_ROLE[stem] ?? stem}`, {
      fix: `Keep one of them: delete the other (a compiled .js beside its .ts belongs in a build folder, not the agent folder).`,
    });
  }
  return found[0];
}

/**
 * The source files of a part folder (`tools`, `subagents/res/tools`, `hooks`, ...), as
 * paths from `rootDir`, sorted. `kind` names one file's role in messages ("tool").
 * Refuses a code file the compiler would skip and two files of one stem.
 */
export async function listSourceDir(rootDir: string, dir: string, kind: string): Promise<string[]> {
  const full = join(rootDir, dir);
  if (!existsSync(full)) return [];
  const names = readdirSync(full).filter((name) => !name.startsWith(".") && !DECLARATIONS.test(name));
  const skipped = names.find((name) => SKIPPED_CODE.test(name));
  if (skipped) {
    const stem = skipped.replace(SKIPPED_CODE, "");
    throw new AssemblyLineError("AL_ERR_AGENT_FOLDER", `${dir}/${skipped} is not loaded: ${dir}/ files are .ts, .mts, .js or .mjs`, {
      fix: `Rename it to ${dir}/${stem}.ts (or .mts / .js / .mjs), or move it out of ${dir}/ if it is not a ${kind}.`,
    });
  }
  const files = names.filter((name) => SOURCE_EXTENSIONS.some((ext) => name.endsWith(ext))).sort();
  const byStem = new Map<string, string>();
  for (const name of files) {
    const stem = stemOf(name);
    const other = byStem.get(stem);
    if (other !== undefined) {
      throw new AssemblyLineError("AL_ERR_AGENT_FOLDER", `${dir}/${other} and ${dir}/${name} are both the ${kind} "${stem}"`, {
        fix: `Keep one of them: delete the other (a compiled .js beside its .ts belongs in a build folder, not the agent folder).`,
      });
    }
    byStem.set(stem, name);
  }
  return files.map((name) => `${dir}/${name}`);
}
