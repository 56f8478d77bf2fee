import type { SubjectKitTemplate } from "./subject-kit-template.js";
import { channelTemplate } from "./subject-kits/channel.js";
import { harnessTemplate } from "./subject-kits/harness.js";
import { runtimeTemplate } from "./subject-kits/runtime.js";
import { telemetrySinkTemplate } from "./subject-kits/telemetry-sink.js";

/** The kinds scaffolded with a shipped kit subject, by `--slot` value. */
export const SUBJECT_KIT_TEMPLATES: Record<string, SubjectKitTemplate> = { runtime: runtimeTemplate, harness: harnessTemplate, channel: channelTemplate, "telemetry-sink": telemetrySinkTemplate };
