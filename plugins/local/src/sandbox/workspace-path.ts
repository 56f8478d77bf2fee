import { AssemblyLineError, WORKSPACE, pathEscape, workspacePath } from "@assemblyline-agents/core";
import { realpath } from "node:fs/promises";
import { basename, dirname, join, sep } from "node:path";

export { WORKSPACE, pathEscape };

/** A logical path checked lexically: `relative` is "" for `/workspace` itself. */
export interface WorkspacePath {
  /** Normalized, e.g. `/workspace/out/report.txt`. */
  logical: string;
  /** Below the root, "/"-separated, e.g. `out/report.txt`. */
  relative: string;
}

/**
 * Check a logical path without touching the disk. Relative paths are relative to
 * `/workspace`. Every ".." is refused, even one that would stay inside: the shell
 * resolves ".." after following symlinks and a lexical normalizer before, so the
 * two could name different files; refusing keeps one meaning.
 */
export function parseWorkspacePath(path: unknown): WorkspacePath {
  // The check every sandbox makes (core's workspacePath), so a path means the same in each.
  const logical = workspacePath(path);
  return { logical, relative: logical.slice(WORKSPACE.length + 1) };
}

export function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** errno codes that mean "nothing there" while walking a path. */
export const MISSING = new Set(["ENOENT", "ENOTDIR"]);

/** Names no host folder: the message may reach the model. */
export function workspaceGone(): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `the sandbox's ${WORKSPACE} folder no longer exists on the host`, {
    fix: `Run the call again: the sandbox makes ${WORKSPACE} again when a command removed it. If it keeps failing, something on the host is in the folder's place: release the sandbox (its folder is removed) and acquire it again.`,
    details: { path: WORKSPACE },
  });
}

/**
 * Resolve every symlink in `hostPath` as far as the path exists: realpath the
 * deepest existing ancestor and append the missing tail (which, not existing,
 * holds no symlinks). Throws AL_ERR_PATH_ESCAPE when that lands outside `root`
 * (already a realpath), naming the path as the caller gave it. `exists` is false
 * when a tail was appended.
 */
export async function resolveInside(root: string, hostPath: string, given: string): Promise<{ real: string; exists: boolean }> {
  const tail: string[] = [];
  let current = hostPath;
  let real: string | undefined;
  while (real === undefined) {
    try {
      real = await realpath(current);
    } catch (error) {
      if (!MISSING.has((error as NodeJS.ErrnoException).code ?? "")) throw error;
      if (current === root) throw workspaceGone();
      tail.push(basename(current));
      current = dirname(current);
    }
  }
  if (!isInside(root, real)) throw pathEscape(given, `resolves through a symlink to a location outside ${WORKSPACE}`);
  return { real: tail.length === 0 ? real : join(real, ...tail.reverse()), exists: tail.length === 0 };
}
