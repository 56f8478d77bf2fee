import { resolve } from "node:path";
import { AssemblyLineError, type StateAdapter } from "@assemblyline-agents/core";
import { FileStateAdapter } from "@assemblyline-agents/local";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";

/**
 * The state a local command or host runs on: what gateway.ts chose, else the file state beside
 * the agent (or in `stateDir`). A state folder given beside gateway.ts's state would be ignored
 * without a word, and the runs looked for there later not found: refused.
 */
export async function localState(chosen: StateAdapter | undefined, options: { stateDir?: string | undefined; agentDir: string; bundle: RuntimeBundle }): Promise<StateAdapter> {
  if (chosen && options.stateDir) {
    const plugin = options.bundle.manifest.gateway?.slots.state?.plugin ?? "a plugin";
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `the state folder ${options.stateDir} would not be used: gateway.ts keeps runs in its state adapter (${plugin})`, {
      fix: "Leave --state-dir (and the config's stateDir) out while gateway.ts chooses the state, or remove state from gateway.ts.",
    });
  }
  return chosen ?? (await FileStateAdapter.open(options.stateDir ? { directory: resolve(options.stateDir) } : { agentDir: options.agentDir }));
}
