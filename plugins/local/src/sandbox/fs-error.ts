import { AssemblyLineError, type ErrorCode } from "@assemblyline-agents/core";
import { getSystemErrorMap } from "node:util";

/** Plain words for the errno codes a file call most often meets; others take the system's own description. */
const REASONS: Record<string, string> = {
  EISDIR: "it is a folder",
  EEXIST: "a file stands where a folder is needed",
  ENOTDIR: "a file stands where a folder is needed",
  ELOOP: "it is a symlink, or a chain of too many symlinks",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOSPC: "no space left on the device",
  ENAMETOOLONG: "a name in the path is too long (most filesystems allow 255 bytes a name)",
};

/**
 * The model's own path mistakes, coded so the file tools hand them back as results it can act on
 * (the Docker and hosted sandboxes give the same codes); any other errno is the host's trouble.
 */
const CODED: Record<string, { code: ErrorCode; fix: string }> = {
  EISDIR: { code: "AL_ERR_PATH_NOT_FOUND", fix: "Name a file, not a folder: list the folder (listFiles) to see its files." },
  EEXIST: { code: "AL_ERR_PATH_NOT_FOUND", fix: "A part of the path is a file: list its folder (listFiles) and choose a path under a folder, or delete the file first." },
  ENOTDIR: { code: "AL_ERR_PATH_NOT_FOUND", fix: "A part of the path is a file: list its folder (listFiles) and choose a path under a folder, or delete the file first." },
  ELOOP: { code: "AL_ERR_PATH_NOT_FOUND", fix: "Name the file a symlink leads to, or a regular file (listFiles shows the folder's files)." },
  ENAMETOOLONG: { code: "AL_ERR_PATH_TOO_LONG", fix: "Use shorter names: at most 255 bytes each." },
  EACCES: { code: "AL_ERR_PATH_DENIED", fix: "A command took away the permission: restore it (chmod in a command), or use another path." },
  EPERM: { code: "AL_ERR_PATH_DENIED", fix: "A command took away the permission: restore it (chmod in a command), or use another path." },
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
  if (code === "ENOENT") {
    return new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `cannot ${action} ${logical}: a part of the path does not exist (ENOENT)`, {
      fix: "List the folder first (listFiles) and use a path it returns.",
      details: { path: logical, errno: code },
    });
  }
  const reason = REASONS[code] ?? (typeof errno === "number" ? getSystemErrorMap().get(errno)?.[1] : undefined) ?? "the system refused it";
  const coded = CODED[code];
  if (coded) return new AssemblyLineError(coded.code, `cannot ${action} ${logical}: ${reason} (${code})`, { fix: coded.fix, details: { path: logical, errno: code } });
  return Object.assign(new Error(`${code}: cannot ${action} ${logical}: ${reason}`), { code, path: logical });
}

/** A system error with only a code, for a refusal the sandbox makes itself in the system's terms. */
export function systemError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
}
