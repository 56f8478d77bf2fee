import { LocalSandboxAdapter, localSandboxFromFile } from "@assemblyline-agents/local";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";

/**
 * The sandbox when no plugin fills the slot: the local one beside the agent folder, with the
 * options of a local sandbox.ts (which would otherwise be dropped, its timeouts and env unused).
 */
export function embeddedSandbox(bundle: RuntimeBundle, agentDir: string): LocalSandboxAdapter {
  const file = bundle.manifest.sandbox;
  return file !== null && file.adapter === "local" ? localSandboxFromFile(file.options, { agentDir }) : new LocalSandboxAdapter({ agentDir });
}
