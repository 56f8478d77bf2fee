import { LocalSandboxAdapter, localSandboxFromFile } from "@assemblyline-agents/local";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { stateDirFolder } from "./state-dir-folder.js";

/**
 * The sandbox when no plugin fills the slot: the local one, with the options of a local
 * sandbox.ts (which would otherwise be dropped, its timeouts and env unused). Its folders are
 * kept with the runs when a state folder is given, unless sandbox.ts names their `root`.
 */
export function embeddedSandbox(bundle: RuntimeBundle, agentDir: string, stateDir?: string): LocalSandboxAdapter {
  const file = bundle.manifest.sandbox;
  const options = file !== null && file.adapter === "local" ? file.options : {};
  const root = options.root === undefined ? stateDirFolder("sandboxes", { agentDir, stateDir }) : undefined;
  const chosen = root === undefined ? options : { ...options, root };
  return file !== null && file.adapter === "local" ? localSandboxFromFile(chosen, { agentDir }) : new LocalSandboxAdapter({ agentDir, ...(root === undefined ? {} : { root }) });
}
