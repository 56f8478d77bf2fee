export { DAYTONA_PLUGIN_ID, createDaytonaSandbox, daytonaSandbox, type DaytonaSandboxDescriptor } from "./gateway.js";
export { DaytonaSandboxAdapter, LABELS, type DaytonaSandboxAdapterOptions } from "./daytona-sandbox-adapter.js";
export { type DaytonaSandboxOptions } from "./options.js";
export { plugin } from "./plugin.js";
