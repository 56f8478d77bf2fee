import { AssemblyLineError } from "../errors.js";
import { WORKSPACE, pathEscape } from "../sandbox-scripts/workspace-path.js";

/** Why a sandbox's command wrapper could not start a command in its `cwd` (the command never ran). */
export const FOLDER_REFUSALS = ["missing", "not-a-folder", "unusable", "outside"] as const;
export type FolderRefusal = (typeof FOLDER_REFUSALS)[number];

/**
 * The error for a command refused its folder: `AL_ERR_PATH_ESCAPE` through a symlink out of
 * /workspace, else `AL_ERR_PATH_NOT_FOUND`. `sandbox` names it in the message ("sandbox run-1").
 */
export function folderRefusalError(refusal: FolderRefusal, at: { cwd: string; given: unknown; sandbox: string }): AssemblyLineError {
  if (refusal === "outside") return pathEscape(at.given, `resolves through a symlink to a location outside ${WORKSPACE}`);
  const why = { missing: "there is nothing there", "not-a-folder": "it is not a folder", unusable: "the command's user cannot enter it" }[refusal];
  return new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `cannot run a command in ${at.cwd} in ${at.sandbox}: ${why}`, {
    fix: "Pass a cwd of an existing folder under /workspace (listFiles shows them), or create it first.",
    details: { path: at.cwd },
  });
}
