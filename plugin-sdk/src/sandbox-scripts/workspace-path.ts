import { posix } from "node:path";
import { AssemblyLineError } from "../errors.js";

/** The physical folder every sandbox path lives under, inside the container. */
export const WORKSPACE = "/workspace";

export function pathEscape(path: unknown, why: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_PATH_ESCAPE", `sandbox path ${JSON.stringify(path)} ${why}`, {
    fix: `Use a path under ${WORKSPACE} without "..", e.g. "${WORKSPACE}/report.txt" or "report.txt"; symlinks must stay inside the workspace.`,
    details: { path, root: WORKSPACE },
  });
}

/**
 * A logical path, checked lexically before it reaches the container: relative
 * paths are relative to /workspace and every ".." is refused (the shell resolves
 * ".." after symlinks, a normalizer before; refusing keeps one meaning).
 */
export function workspacePath(path: unknown): string {
  if (typeof path !== "string" || path === "") throw pathEscape(path, "is not a non-empty string");
  if (path.includes("\0")) throw pathEscape(path, "contains a NUL byte");
  // Most often a slip ("report.txt\n"); and the file scripts pass paths a line each (file-scripts.ts).
  if (path.includes("\n")) throw pathEscape(path, "contains a newline");
  if (path.split("/").includes("..")) throw pathEscape(path, `climbs out of ${WORKSPACE} with ".."`);
  const logical = posix.normalize(path.startsWith("/") ? path : `${WORKSPACE}/${path}`).replace(/\/+$/, "") || "/";
  if (logical !== WORKSPACE && !logical.startsWith(`${WORKSPACE}/`)) throw pathEscape(path, `is not under ${WORKSPACE}`);
  return logical;
}
