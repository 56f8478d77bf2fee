import { readdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { sha256 } from "../canonical-json.js";
import type { SourceRef } from "./manifest.js";

const CODE_FILE = /\.(ts|mts|cts|js|mjs|cjs)$/;
/** instructions.md and skills/ of the root agent or of any (nested) subagent. */
const AGENT_PART = /^(subagents\/[^/]+\/)*(instructions\.md$|skills\/)/;
const SKIPPED_DIRS = new Set(["node_modules", ".assembly-line", ".git"]);

/** Hash text with normalized line endings, so a Windows checkout builds the same revision. */
export async function hashSource(agentDir: string, file: string): Promise<SourceRef> {
  const text = (await readFile(join(agentDir, file), "utf8")).replace(/\r\n/g, "\n");
  return { file, hash: sha256(text) };
}

/**
 * Every file that can change behaviour: code anywhere in the folder, package.json,
 * instructions.md beside an agent.ts, and everything under a skills/ folder (the
 * root's or a subagent's). Docs and test data elsewhere do not count.
 */
export async function listBehaviourFiles(agentDir: string): Promise<string[]> {
  const files: string[] = [];
  async function walk(dir: string): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true });
    for (const entry of entries) {
      if (entry.name.startsWith(".") || SKIPPED_DIRS.has(entry.name)) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) {
        const rel = relative(agentDir, path).split(sep).join("/");
        if (CODE_FILE.test(rel) || rel === "package.json" || AGENT_PART.test(rel)) files.push(rel);
      }
    }
  }
  await walk(agentDir);
  return files.sort();
}
