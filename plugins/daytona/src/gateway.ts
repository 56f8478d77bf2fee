import { adapterDescriptor, isAdapterDescriptor, type AdapterDescriptor } from "@assemblyline-agents/core";
import { DaytonaSandboxAdapter, type DaytonaSandboxAdapterOptions } from "./daytona-sandbox-adapter.js";
import { resolveDaytonaOptions, type DaytonaSandboxOptions } from "./options.js";

/** The plugin id descriptors name; the kernel routes them to this package. */
export const DAYTONA_PLUGIN_ID = "daytona";

export type DaytonaSandboxDescriptor = AdapterDescriptor<"sandbox", DaytonaSandboxOptions>;

/**
 * `sandbox: daytonaSandbox({ image: "node:22" })` in gateway.ts, or the default
 * export of sandbox.ts: each run gets its own Daytona sandbox with a physical
 * /workspace, created when a tool first needs it and deleted at the run's end.
 * The API key comes from DAYTONA_API_KEY on the host, never from these options.
 */
export function daytonaSandbox(options: DaytonaSandboxOptions = {}): DaytonaSandboxDescriptor {
  // Checked here too, so a typo or an unsupported option fails where it is written.
  resolveDaytonaOptions(options, "default");
  return adapterDescriptor("sandbox", DAYTONA_PLUGIN_ID, { ...options });
}

/** The host's side of daytonaSandbox(): a live adapter. */
export function createDaytonaSandbox(options: DaytonaSandboxDescriptor | DaytonaSandboxAdapterOptions, context: Pick<DaytonaSandboxAdapterOptions, "agentDir" | "hostEnv"> = {}): DaytonaSandboxAdapter {
  const resolved = isAdapterDescriptor(options) ? (options.options as DaytonaSandboxOptions) : options;
  return new DaytonaSandboxAdapter({ ...resolved, ...context });
}
