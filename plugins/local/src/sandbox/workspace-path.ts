import { AssemblyLineError } from "@assemblyline-agents/core";
import { realpath } from "node:fs/promises";
import { basename, dirname, join, posix, sep } from "node:path";

/** The logical root every sandbox path lives under. */
export const WORKSPACE = "/workspace";

/** A logical path checked lexically: `relative` is "" for `/workspace` itself. */
export interface WorkspacePath {
  /** Normalized, e.g. `/workspace/out/report.txt`. */
  logical: string;
  /** Below the root, "/"-separated, e.g. `out/report.txt`. */
  relative: string;
}

export function pathEscape(path: unknown, why: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_PATH_ESCAPE", `sandbox path ${JSON.stringify(path)} ${why}`, {
    fix: `Use a path under ${WORKSPACE} without "..", e.g. "${WORKSPACE}/report.txt" or "report.txt"; symlinks must stay inside the workspace.`,
    details: { path, root: WORKSPACE },
  });
}

/**
 * Check a logical path without touching the disk. Relative paths are relative to
 * `/workspace`. Every ".." is refused, even one that would stay inside: the shell
 * resolves ".." after following symlinks and a lexical normalizer before, so the
 * two could name different files; refusing keeps one meaning.
 */
export function parseWorkspacePath(path: unknown): WorkspacePath {
  if (typeof path !== "string" || path === "") throw pathEscape(path, "is not a non-empty string");
  if (path.includes("\0")) throw pathEscape(path, "contains a NUL byte");
  // Most often a slip ("report.txt\n"); refused as the Docker sandbox, whose file scripts pass paths a line each, refuses it.
  if (path.includes("\n")) throw pathEscape(path, "contains a newline");
  if (path.split("/").includes("..")) throw pathEscape(path, `climbs out of ${WORKSPACE} with ".."`);
  const absolute = path.startsWith("/") ? path : `${WORKSPACE}/${path}`;
  const logical = posix.normalize(absolute).replace(/\/+$/, "") || "/";
  if (logical !== WORKSPACE && !logical.startsWith(`${WORKSPACE}/`)) {
    throw pathEscape(path, `is not under ${WORKSPACE} (host paths are not reachable)`);
  }
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
    fix: "The sandbox was released or its folder removed; acquire the sandbox again.",
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
