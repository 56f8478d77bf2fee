/**
 * Conformance kits: vitest suites any plugin runs against its own adapter.
 * Import from "@assemblyline-agents/core/testkit" inside a vitest test file.
 */
export * from "./state/index.js";
export { describeBlobStoreConformance } from "./blob.js";
export { describeDeployConformance } from "./deploy.js";
export { describeRateLimiterStoreConformance } from "./rate-limiter.js";
export { describeSandboxConformance, type SandboxConformanceClaims } from "./sandbox.js";
export { itIsReplaySafe } from "./replay-stress.js";
export { describeChannelConformance, deliveryMetadataOf, type ChannelKitEvent, type ChannelKitSubject } from "./channel.js";
export { describeTelemetrySinkConformance, type DeliveredSpan, type TelemetrySinkSubject } from "./telemetry-sink.js";
export { describeSchedulerConformance, type SchedulerKitSubject } from "./scheduler.js";
export { describeHarnessConformance, type HarnessKitReply, type HarnessKitSubject } from "./harness.js";
export { KitHarnessContext, type KitTool } from "./harness-context.js";
export { describeRuntimeConformance, type RuntimeKitHost, type RuntimeKitSubject } from "./runtime.js";
