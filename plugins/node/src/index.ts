export { listenNodeRuntime, type NodeRuntimeHandle } from "./host/server.js";
export { EXIT_GRACE_MS, installSignalHandlers, type SignalHandlerOptions } from "./host/signals.js";
export {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_CONCURRENT_RUNS,
  DEFAULT_MAX_QUEUED_RUNS,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type NodeRuntimeOptions,
} from "./host/options.js";
export type { HostAuthOptions, AuthRequest, RouteKind } from "./host/auth.js";
export {
  DEFAULT_RATE_LIMITS,
  MemoryRateLimiterStore,
  RATE_LIMIT_BUCKETS,
  checkRateLimitRequest,
  parseRateLimitEnv,
  type BucketLimit,
  type RateLimitBucket,
  type RateLimitKeyRequest,
  type RateLimitOptions,
} from "./host/rate-limit.js";
export type { AttachmentOptions } from "./host/attachments.js";
export type { OutboxOptions } from "./host/outbox.js";
export { KILL_SWITCH_SETTING, killSwitchSetting, type KillSwitchState } from "./host/kill-switch.js";
export { SHUTDOWN_STEPS } from "./host/shutdown.js";
export { readableLogger } from "./host/readable-logger.js";
export { noopLogger, type RateLimiterStore, type RateLimitRequest, type RateLimitDecision, type RuntimeLogger } from "@assemblyline-agents/core";
export { NODE_PLUGIN_ID, nodeRuntime, plugin, type NodeRuntimeSlotOptions } from "./plugin.js";
export type { ProjectConfig } from "./cli/config.js";
