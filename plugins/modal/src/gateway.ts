import { adapterDescriptor, isAdapterDescriptor, type AdapterDescriptor } from "@assemblyline-agents/core";
import { ModalSandboxAdapter, type ModalSandboxAdapterOptions } from "./modal-sandbox-adapter.js";
import { resolveModalOptions, type ModalSandboxOptions } from "./options.js";

/** The plugin id descriptors name; the kernel routes them to this package. */
export const MODAL_PLUGIN_ID = "modal";

export type ModalSandboxDescriptor = AdapterDescriptor<"sandbox", ModalSandboxOptions>;

/**
 * `sandbox: modalSandbox({ image: "debian:bookworm-slim" })` in gateway.ts, or the default
 * export of sandbox.ts: each run gets its own Modal sandbox with a physical
 * /workspace, created when a tool first needs it and terminated at the run's end.
 * The token comes from MODAL_TOKEN_ID and MODAL_TOKEN_SECRET on the host, never from these options.
 */
export function modalSandbox(options: ModalSandboxOptions = {}): ModalSandboxDescriptor {
  // Checked here too, so a typo or an unsupported option fails where it is written.
  resolveModalOptions(options, "default");
  return adapterDescriptor("sandbox", MODAL_PLUGIN_ID, { ...options });
}

/** The host's side of modalSandbox(): a live adapter. */
export function createModalSandbox(options: ModalSandboxDescriptor | ModalSandboxAdapterOptions, context: Pick<ModalSandboxAdapterOptions, "agentDir" | "hostEnv"> = {}): ModalSandboxAdapter {
  const resolved = isAdapterDescriptor(options) ? (options.options as ModalSandboxOptions) : options;
  return new ModalSandboxAdapter({ ...resolved, ...context });
}
