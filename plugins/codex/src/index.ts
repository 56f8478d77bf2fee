export { codexAgentHarness } from "./harness.js";
export { CODEX_PLUGIN_ID, codexPlugin, plugin } from "./plugin.js";
export { CODEX_HARNESS_NAME, CODEX_PROVIDER, DISABLED_CODEX_FEATURES, appServerArgs, resolveCodexCommand, type CodexHarnessOptions } from "./options.js";
export { CODEX_CONTINUATION_VERSION, type CodexContinuationData, type PendingCodexCall, type ResponseItem } from "./continuation.js";
export { CODEX_REQUEST_MAX_RETRIES, CODEX_STREAM_MAX_RETRIES } from "./provider-failure.js";
export { PAUSED_CALL_USAGE_WAIT_MS } from "./turn.js";
