import { AssemblyLineError } from "../errors.js";
import { FILE_SCRIPT_EXIT } from "./file-scripts.js";
import { WORKSPACE, pathEscape } from "./workspace-path.js";

export type WorkspaceEntry = { path: string; type: "file" | "directory"; size: number };

/** One file call, for its errors: `logical` is the checked path, `given` the path as the caller wrote it. */
export interface FileCall {
  operation: "read" | "write" | "delete" | "list";
  logical: string;
  given: unknown;
  sandboxId: string;
}

/** The error a file script's exit code stands for, or undefined when the code is none of FILE_SCRIPT_EXIT's (the sandbox itself failed). */
export function fileScriptRefusal(exitCode: number, call: FileCall): AssemblyLineError | undefined {
  const { operation, logical, given, sandboxId } = call;
  switch (exitCode) {
    case FILE_SCRIPT_EXIT.missing:
      return new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `nothing at ${logical} in sandbox ${sandboxId}`, {
        fix: "List the folder first (listFiles) and use a path it returns.",
        details: { path: logical },
      });
    // The read script's kind check is `[ -f ]`: a FIFO, a socket or a device fails it as a folder does.
    case FILE_SCRIPT_EXIT.wrongKind:
      return fileKindError(call, operation === "read" ? "is not a regular file (a folder, a FIFO, a socket or a device)" : "is a folder");
    case FILE_SCRIPT_EXIT.escape:
      return pathEscape(given, `resolves through a symlink to a location outside ${WORKSPACE}`);
    case FILE_SCRIPT_EXIT.newlineName:
      return pathEscape(given, "resolves through a symlink to a name holding a newline, which no sandbox path may hold");
    case FILE_SCRIPT_EXIT.fileInTheWay:
      return new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `cannot ${operation} ${logical} in sandbox ${sandboxId}: a file stands where a folder is needed`, {
        fix: "A part of the path is a file (or a symlink to nothing): list its folder (listFiles) and choose a path under a folder, or delete the file first.",
        details: { path: logical },
      });
    case FILE_SCRIPT_EXIT.tooManyLinks:
      return fileKindError(call, "is a chain of too many symlinks");
    case FILE_SCRIPT_EXIT.notRegularFile:
      return fileKindError(call, "is not a regular file (a FIFO, a socket or a device)");
    case FILE_SCRIPT_EXIT.workspaceMissing:
      return workspaceMissingError(`${operation} ${logical} in sandbox ${sandboxId}`, logical);
    case FILE_SCRIPT_EXIT.shortWrite:
      return new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `could not write ${logical} in sandbox ${sandboxId}: the file holds fewer bytes than were sent (the stream to the sandbox was cut short, or a command changed the file meanwhile)`, {
        fix: "Write the file again; if it keeps failing, check the sandbox's free disk space and its engine.",
        details: { path: logical },
      });
    default:
      return undefined;
  }
}

/**
 * The error for a call that found /workspace itself gone, once the sandbox
 * tried and failed to make it again. `action` says what could not be done
 * ("read /workspace/a.txt in sandbox run-1"), `path` which path was asked for.
 */
export function workspaceMissingError(action: string, path: string, cause?: unknown): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `cannot ${action}: ${WORKSPACE} itself is missing (a command removed it, or put a file in its place), and the sandbox could not make it again`, {
    fix: `Files of ${WORKSPACE} are gone with it: end this run and start a new one for a new sandbox. To empty the workspace, delete what is in it (deleteFile("${WORKSPACE}")), never the folder itself.`,
    details: { path, workspaceMissing: true },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A file call refused because its path names something other than a regular file (`why`: "is a folder"). */
export function fileKindError(call: FileCall, why: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `cannot ${call.operation} ${call.logical} in sandbox ${call.sandboxId}: it ${why}`, {
    fix: "Name a regular file under /workspace (listFiles shows the folder's files).",
    details: { path: call.logical },
  });
}

/**
 * The real path a script printed as its last line (locate, prepareWrite), for
 * a caller that reads or writes it through a channel of its own, as root or
 * the provider's user: the script checked it, and a path that reads otherwise
 * here never gets that far.
 */
export function checkedRealPath(printed: string, given: unknown): string {
  // Only the line end is the script's: a name may end in a space.
  const path = printed.replace(/\n$/, "");
  if (!path.startsWith(`${WORKSPACE}/`) || path.includes("\n")) throw pathEscape(given, `resolves to ${JSON.stringify(path)}, not a file under ${WORKSPACE}`);
  return path;
}

/** prepareWrite's whole output, as printed: the real path to write, and the mode, owner and link count of the file already there, if any. */
export function preparedWrite(output: string, given: unknown): { target: string; existing: { mode: number; uid: number; gid: number; links: number } | undefined } {
  const split = output.indexOf("\n");
  const kept = /^([0-7]+) (\d+) (\d+) (\d+)$/.exec(output.slice(0, split));
  return {
    target: checkedRealPath(output.slice(split + 1), given),
    existing: kept ? { mode: parseInt(kept[1]!, 8), uid: Number(kept[2]), gid: Number(kept[3]), links: Number(kept[4]) } : undefined,
  };
}

/** list's output as entries under `logical`, the path asked for, sorted by path. */
export function listedEntries(output: string, logical: string): WorkspaceEntry[] {
  const entries: WorkspaceEntry[] = [];
  // Each line is "kind|size|path", the path relative to the one asked for ("." for itself).
  // Only "\n" ends a line: with `s`, "." also takes the CR, U+2028 and U+2029 a name may hold.
  for (const line of output.split("\n")) {
    const match = /^([^|]+)\|(\d+)\|\.(\/.*)?$/s.exec(line);
    if (!match) continue;
    const [, kind, size, below] = match as unknown as [string, string, string, string | undefined];
    const entryPath = `${logical}${below ?? ""}`;
    entries.push(kind === "directory" ? { path: entryPath, type: "directory", size: 0 } : { path: entryPath, type: "file", size: Number(size) });
  }
  return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
