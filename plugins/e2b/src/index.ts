export { E2B_PLUGIN_ID, createE2bSandbox, e2bSandbox, type E2bSandboxDescriptor } from "./gateway.js";
export { E2bSandboxAdapter, METADATA, type E2bSandboxAdapterOptions } from "./e2b-sandbox-adapter.js";
export { ShellSandbox, type SandboxDriver } from "./shell-sandbox.js";
export { TIMEOUT_EXIT_CODE } from "./exec-script.js";
export { type E2bSandboxOptions } from "./options.js";
export { plugin } from "./plugin.js";
