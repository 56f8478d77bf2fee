export { E2B_PLUGIN_ID, createE2bSandbox, e2bSandbox, type E2bSandboxDescriptor } from "./gateway.js";
export { E2bSandboxAdapter, METADATA, type E2bSandboxAdapterOptions } from "./e2b-sandbox-adapter.js";
export { type E2bSandboxOptions } from "./options.js";
export { plugin } from "./plugin.js";
