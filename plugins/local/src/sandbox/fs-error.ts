import { AssemblyLineError } from "@assemblyline-agents/core";
import { getSystemErrorMap } from "node:util";

/** Plain words for the errno codes a file call most often meets; others take the system's own description. */
const REASONS: Record<string, string> = {
  EISDIR: "it is a folder",
  EEXIST: "a file stands where a folder is needed",
  ELOOP: "it is a symlink, or a chain of too many symlinks",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOSPC: "no space left on the device",
  ENAMETOOLONG: "a name in the path is too long (most filesystems allow 255 bytes a name)",
};

/**
 * Restate a filesystem error with the logical path instead of the host one, so a
 * model reading it learns about /workspace, not this machine's layout: Node's own
 * message names the host path, so none of it is kept. Errors that are not system
 * errors (a sandbox refusal, a wrong argument type) pass through as they are.
 */
export function fsError(error: unknown, action: string, logical: string): unknown {
  if (error instanceof AssemblyLineError) return error;
  const { code, errno } = (error ?? {}) as NodeJS.ErrnoException;
  if (typeof code !== "string" || !/^E[A-Z0-9]+$/.test(code)) return error;
  if (code === "ENOENT" || code === "ENOTDIR") {
    return new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `cannot ${action} ${logical}: a part of the path does not exist or is not a folder (${code})`, {
      fix: "List the folder first (listFiles) and use a path it returns.",
      details: { path: logical, errno: code },
    });
  }
  const reason = REASONS[code] ?? (typeof errno === "number" ? getSystemErrorMap().get(errno)?.[1] : undefined) ?? "the system refused it";
  return Object.assign(new Error(`${code}: cannot ${action} ${logical}: ${reason}`), { code, path: logical });
}

/** A system error with only a code, for a refusal the sandbox makes itself in the system's terms. */
export function systemError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
}
