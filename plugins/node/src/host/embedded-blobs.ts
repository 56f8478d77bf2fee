import { LocalBlobStore } from "@assemblyline-agents/local";
import { stateDirFolder } from "./state-dir-folder.js";

/** The blob store when no plugin fills the slot: local files, kept with the runs when a state folder is given. */
export function embeddedBlobs(agentDir: string, stateDir?: string): LocalBlobStore {
  const directory = stateDirFolder("blobs", { agentDir, stateDir });
  return new LocalBlobStore(directory === undefined ? { agentDir } : { directory });
}
