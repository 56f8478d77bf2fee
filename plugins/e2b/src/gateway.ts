import { adapterDescriptor, isAdapterDescriptor, type AdapterDescriptor } from "@assemblyline-agents/core";
import { E2bSandboxAdapter, type E2bSandboxAdapterOptions } from "./e2b-sandbox-adapter.js";
import { resolveE2bOptions, type E2bSandboxOptions } from "./options.js";

/** The plugin id descriptors name; the kernel routes them to this package. */
export const E2B_PLUGIN_ID = "e2b";

export type E2bSandboxDescriptor = AdapterDescriptor<"sandbox", E2bSandboxOptions>;

/**
 * `sandbox: e2bSandbox({ template: "base" })` in gateway.ts, or the default
 * export of sandbox.ts: each run gets its own E2B sandbox with a physical
 * /workspace, created when a tool first needs it and killed at the run's end.
 * The API key comes from E2B_API_KEY on the host, never from these options.
 */
export function e2bSandbox(options: E2bSandboxOptions = {}): E2bSandboxDescriptor {
  // Checked here too, so a typo or an unsupported option fails where it is written.
  resolveE2bOptions(options, "default");
  return adapterDescriptor("sandbox", E2B_PLUGIN_ID, { ...options });
}

/** The host's side of e2bSandbox(): a live adapter. */
export function createE2bSandbox(options: E2bSandboxDescriptor | E2bSandboxAdapterOptions, context: Pick<E2bSandboxAdapterOptions, "agentDir" | "hostEnv"> = {}): E2bSandboxAdapter {
  const resolved = isAdapterDescriptor(options) ? (options.options as E2bSandboxOptions) : options;
  return new E2bSandboxAdapter({ ...resolved, ...context });
}
