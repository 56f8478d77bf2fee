import type {
  ConversationStore,
  FileIndexStore,
  MemoryStateStore,
  RuntimeSettingsStore,
  SandboxSessionStore,
  ScheduleStateStore,
  UsageStore,
} from "./facets.js";
import { STATE_FACET_NAMES, missingFacetMethods } from "./guards.js";
import type { RunStore } from "./runs.js";
import type { SkillStore } from "./skills.js";

export * from "./runs.js";
export * from "./facets.js";
export * from "./guards.js";
export * from "./skills.js";
export * from "./skill-check.js";
export * from "./fence.js";
export * from "./copy.js";
export * from "./iso-time.js";
export * from "./run-pages.js";
export * from "./pending-deliveries.js";
export * from "./usage-records.js";
export * from "./records-by-path.js";
export * from "./code-point-order.js";
export * from "./memory-records.js";
export * from "./list-limit.js";
export * from "./input-checks.js";

/** A full state adapter: the intersection of every facet. */
export interface StateAdapter
  extends RunStore,
    ConversationStore,
    ScheduleStateStore,
    FileIndexStore,
    UsageStore,
    SandboxSessionStore,
    MemoryStateStore,
    RuntimeSettingsStore,
    SkillStore {
  /** Release connections and files at graceful shutdown. */
  close?(): Promise<void>;
}

/** Only the facets a host can persist; `runs` is required, the rest fall back to memory. */
export interface StateStores {
  runs: RunStore;
  conversations?: ConversationStore;
  schedules?: ScheduleStateStore;
  files?: FileIndexStore;
  usage?: UsageStore;
  sandboxSessions?: SandboxSessionStore;
  memory?: MemoryStateStore;
  settings?: RuntimeSettingsStore;
  /** The durable skill store (seeded from skills/, written by self-improvement). */
  skills?: SkillStore;
  close?(): Promise<void>;
}

export function isStateAdapter(value: unknown): value is StateAdapter {
  return STATE_FACET_NAMES.every((facet) => missingFacetMethods(value, facet).length === 0);
}
export * from "./json-copy.js";
