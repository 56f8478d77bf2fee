import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";

/** The folders of the embedded defaults that are kept with the runs when a state folder is given. */
export type KeptFolder = "blobs" | "sandboxes";

/**
 * Where an embedded default keeps its files for a host given `stateDir`: `<stateDir>/<name>`,
 * so that a release in a new agent folder (a redeploy) finds a paused run's attachments and
 * /workspace files beside its runs. undefined means the adapter's own default beside the agent,
 * `<agentDir>/.assembly-line/<name>`: without a state folder, and while `<stateDir>/<name>` does
 * not exist but that old folder holds files, so that what an earlier version kept there is not lost.
 */
export function stateDirFolder(name: KeptFolder, places: { agentDir: string; stateDir?: string | undefined }): string | undefined {
  if (places.stateDir === undefined) return undefined;
  const folder = join(resolve(places.stateDir), name);
  if (existsSync(folder)) return folder;
  return holdsFiles(join(places.agentDir, ".assembly-line", name)) ? undefined : folder;
}

function holdsFiles(folder: string): boolean {
  try {
    return readdirSync(folder).length > 0;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return false;
    throw error;
  }
}
