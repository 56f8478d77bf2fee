import type {
  ConversationStore,
  FileIndexStore,
  MemoryStateStore,
  RuntimeSettingsStore,
  SandboxSessionStore,
  ScheduleStateStore,
  UsageStore,
} from "./facets.js";
import type { RunStore } from "./runs.js";
import type { SkillStore } from "./skills.js";

/** Every facet by its `StateStores` key, with the methods a live object must have. */
export const STATE_FACET_METHODS = {
  runs: [
    "createRun", "getRun", "listRuns", "appendEvents", "listEvents", "markObserved", "getToolCall",
    "listToolCalls", "getStep", "getCheckpoint", "acquireRunLease", "renewRunLease", "releaseRunLease",
    "claimRecoverableRuns", "listDeliveries", "claimDeliveries", "completeDelivery", "failDelivery",
  ],
  conversations: ["appendConversationMessages", "listConversationMessages"],
  schedules: ["upsertSchedule", "getSchedule", "listSchedules", "claimDueSchedules", "completeScheduleRun", "deleteSchedule"],
  files: ["putFileRecord", "getFileRecord", "listFileRecords", "deleteFileRecord"],
  usage: ["recordUsage", "listUsage"],
  sandboxSessions: ["getSandboxSession", "putSandboxSession", "deleteSandboxSession", "listSandboxSessions"],
  memory: ["readMemory", "writeMemory", "listMemory", "deleteMemory"],
  settings: ["getSetting", "putSetting", "listSettingAudit"],
  skills: ["getSkill", "listSkills", "putSkill", "deleteSkill"],
} as const satisfies Record<string, readonly string[]>;

export type StateFacetName = keyof typeof STATE_FACET_METHODS;
export const STATE_FACET_NAMES = Object.keys(STATE_FACET_METHODS) as StateFacetName[];

/** The methods of `facet` that `value` lacks (empty when it implements the facet). */
export function missingFacetMethods(value: unknown, facet: StateFacetName): string[] {
  if (typeof value !== "object" || value === null) return [...STATE_FACET_METHODS[facet]];
  const record = value as Record<string, unknown>;
  return STATE_FACET_METHODS[facet].filter((method) => typeof record[method] !== "function");
}

const implementsFacet = (facet: StateFacetName) => (value: unknown) => missingFacetMethods(value, facet).length === 0;

export const isRunStore = implementsFacet("runs") as (value: unknown) => value is RunStore;
export const isConversationStore = implementsFacet("conversations") as (value: unknown) => value is ConversationStore;
export const isScheduleStateStore = implementsFacet("schedules") as (value: unknown) => value is ScheduleStateStore;
export const isFileIndexStore = implementsFacet("files") as (value: unknown) => value is FileIndexStore;
export const isUsageStore = implementsFacet("usage") as (value: unknown) => value is UsageStore;
export const isSandboxSessionStore = implementsFacet("sandboxSessions") as (value: unknown) => value is SandboxSessionStore;
export const isMemoryStateStore = implementsFacet("memory") as (value: unknown) => value is MemoryStateStore;
export const isRuntimeSettingsStore = implementsFacet("settings") as (value: unknown) => value is RuntimeSettingsStore;
export const isSkillStore = implementsFacet("skills") as (value: unknown) => value is SkillStore;
