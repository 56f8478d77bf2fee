import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { AssemblyLineError, sourceFileHash } from "@assemblyline-agents/core";
import { join, relative, sep } from "node:path";
import type { SourceRef } from "./manifest.js";

const CODE_FILE = /\.(ts|mts|cts|js|mjs|cjs)$/;
/** instructions.md and skills/ of the root agent or of any (nested) subagent. */
const AGENT_PART = /^(subagents\/[^/]+\/)*(instructions\.md$|skills\/)/;
const SKIPPED_DIRS = new Set(["node_modules", ".assembly-line", ".git"]);

/** A file's manifest hash: text with normalized line endings (a Windows checkout builds the same revision), anything else byte for byte. */
export async function hashSource(agentDir: string, file: string): Promise<SourceRef> {
  return { file, hash: sourceFileHash(await readFile(join(agentDir, file))) };
}

/**
 * Every file that can change behaviour: code anywhere in the folder, package.json,
 * instructions.md beside an agent.ts, and everything under a skills/ folder (the
 * root's or a subagent's). Docs and test data elsewhere do not count; data files the
 * agent's modules import are added by listImportedFiles.
 */
export async function listBehaviourFiles(agentDir: string): Promise<string[]> {
  const files: string[] = [];
  /** `linked`: the real paths of the linked folders the walk is inside, so a link cycle ends; null outside any. */
  async function walk(dir: string, found: string[], linked: Set<string> | null): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true });
    for (const entry of entries) {
      if (entry.name.startsWith(".") || SKIPPED_DIRS.has(entry.name)) continue;
      const path = join(dir, entry.name);
      const rel = relative(agentDir, path).split(sep).join("/");
      if (entry.isSymbolicLink()) {
        await refuseLink(path, rel, linked);
        continue;
      }
      if (entry.isDirectory()) await walk(path, found, linked);
      else if (entry.isFile() && isBehaviourFile(rel)) found.push(rel);
    }
  }
  /**
   * A link may lead anywhere: its files would run without the revision covering
   * them, and a revision copy of the folder would not hold them. One to data only is left alone.
   */
  async function refuseLink(path: string, rel: string, seen: Set<string> | null): Promise<void> {
    const target = await stat(path).catch(() => undefined);
    let holds: string | undefined;
    if (target?.isDirectory()) {
      const real = await realpath(path);
      if (seen?.has(real)) return;
      const inside: string[] = [];
      await walk(path, inside, new Set([...(seen ?? []), real]));
      holds = inside[0];
      if (holds === undefined) return;
    } else if (!isBehaviourFile(rel)) return;
    throw new AssemblyLineError("AL_ERR_AGENT_FOLDER", `${rel} is a symbolic link${holds ? ` to a folder with code (${holds})` : ""}: the build covers and keeps only the folder's own files`, {
      fix: "Put the file itself in the agent folder (the build copies each file it runs into its revision), or import shared code from a package in node_modules.",
    });
  }
  await walk(agentDir, files, null);
  return files.sort();
}

function isBehaviourFile(rel: string): boolean {
  return CODE_FILE.test(rel) || rel === "package.json" || AGENT_PART.test(rel);
}
