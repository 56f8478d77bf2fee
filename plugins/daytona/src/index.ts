export { DAYTONA_PLUGIN_ID, createDaytonaSandbox, daytonaSandbox, type DaytonaSandboxDescriptor } from "./gateway.js";
export { DaytonaSandboxAdapter, LABELS, type DaytonaSandboxAdapterOptions } from "./daytona-sandbox-adapter.js";
export { ShellSandbox, type SandboxDriver } from "./shell-sandbox.js";
export { TIMEOUT_EXIT_CODE } from "./exec-script.js";
export { type DaytonaSandboxOptions } from "./options.js";
export { plugin } from "./plugin.js";
