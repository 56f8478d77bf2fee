import { canonicalJson, type JsonValue } from "../json.js";
import { isRunOfAgent } from "./runs.js";

export interface ConversationMessage {
  role: "user" | "assistant";
  content: string;
  runId: string | null;
  createdAt: string;
  /**
   * The agent whose history holds the message: the `agentId` it was appended with (the run's agent
   * id; a subagent's is `<agent id>/<path>`), null when appended without one. A store sets it on what
   * it lists; on what is appended it is ignored (the append's `agentId` decides). A store built
   * before the option lists no such field.
   */
  agentId?: string | null;
}

/**
 * Whose history an append writes or a listing reads. One store may hold several agents'
 * conversations (e.g. one database), and two agents may serve the same conversation id (one chat
 * channel): each agent's model context holds only its own messages.
 */
export interface ConversationScope {
  /**
   * Appending: the agent the messages belong to. Listing: only that agent's messages and those
   * appended without an agent (written before the option), and `limit` counts only those. Matched
   * exactly: a subagent's history is its own agent id's, not its root agent's. Left out, a listing
   * reads every agent's messages, as before.
   */
  agentId?: string;
}

/**
 * Whether a listing scoped to `agentId` (`ConversationScope`) holds `message`: every message when
 * no agent is asked for; else that agent's, and those appended without one (`agentId` null, or no
 * such field in what a store kept before the option).
 */
export function isInConversationScope(message: Pick<ConversationMessage, "agentId">, agentId: string | undefined): boolean {
  return isOfAgentOrNone(message.agentId, agentId);
}

/** With no agent asked for, anything; else the asked agent's records and those kept without an agent. */
function isOfAgentOrNone(recordAgentId: string | null | undefined, askedAgentId: string | undefined): boolean {
  return askedAgentId === undefined || (recordAgentId ?? null) === null || recordAgentId === askedAgentId;
}

/**
 * Conversation history, read by the context policy. The runtime always passes `agentId`; a store
 * built before it ignores it (appends without an agent, lists every agent's messages, listing no
 * `agentId` field): the runtime then drops another agent's messages by their run's agent.
 */
export interface ConversationStore {
  appendConversationMessages(conversationId: string, messages: ConversationMessage[], options?: ConversationScope): Promise<void>;
  /**
   * Oldest first; with `limit` (a whole number >= 0, else refused: AL_ERR_STATE_INPUT_INVALID), only the
   * last `limit` messages; with `agentId`, see `ConversationScope`.
   */
  listConversationMessages(conversationId: string, options?: { limit?: number } & ConversationScope): Promise<ConversationMessage[]>;
}

export interface ScheduleRecord {
  id: string;
  /**
   * The agent whose scheduler dispatches it (an automation's row carries its agent). Null or left
   * out: any agent's scheduler may (a schedule written without an agent, or before the field). A
   * store keeps what `upsertSchedule` was given; one built before the field lists none.
   */
  agentId?: string | null;
  /** Milliseconds between runs. */
  intervalMs: number;
  nextRunAt: string;
  payload: JsonValue;
  enabled: boolean;
  lease: { owner: string; expiresAt: string } | null;
}

export interface ScheduleClaimOptions {
  owner: string;
  ttlMs: number;
  /** Clock override for tests; defaults to now. */
  now?: Date;
  limit?: number;
  /**
   * Claim only this agent's schedules and those of no agent (`ScheduleRecord.agentId`). Left out,
   * every agent's. One store may hold several agents' schedules (e.g. one database): a scheduler
   * that leased another agent's row would hold it from that agent's scheduler for a whole lease,
   * or start its run as the wrong agent. A store applies it before `limit`, in the same atomic step
   * as the lease; callers still check what comes back (a store built before the option ignores it).
   */
  agentId?: string;
}

/**
 * Whether a claim asked with `agentId` (`ScheduleClaimOptions`) may take `schedule`: any schedule
 * when no agent is asked for; else that agent's and those of no agent.
 */
export function isScheduleClaimableBy(schedule: Pick<ScheduleRecord, "agentId">, agentId: string | undefined): boolean {
  return isOfAgentOrNone(schedule.agentId, agentId);
}

/**
 * Whether stored schedule row `stored` equals `expected` as `replaceSchedule` and `deleteScheduleIf`
 * compare them: every field but the lease, `nextRunAt` as a time, `agentId` null or left out alike,
 * `payload` as JSON (object keys in any order).
 */
export function isSameSchedule(stored: Omit<ScheduleRecord, "lease">, expected: Omit<ScheduleRecord, "lease">): boolean {
  return (
    stored.id === expected.id &&
    (stored.agentId ?? null) === (expected.agentId ?? null) &&
    stored.intervalMs === expected.intervalMs &&
    Date.parse(stored.nextRunAt) === Date.parse(expected.nextRunAt) &&
    stored.enabled === expected.enabled &&
    canonicalJson(stored.payload) === canonicalJson(expected.payload)
  );
}

export interface ScheduleStateStore {
  upsertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<void>;
  /**
   * Write `schedule` only if no schedule has its id, in one atomic step: true when written, false
   * (nothing changed) when one exists, so two concurrent creators of one id never both succeed.
   * Optional: without it a caller reads before it writes, which two concurrent writers can both pass.
   */
  insertSchedule?(schedule: Omit<ScheduleRecord, "lease">): Promise<boolean>;
  /**
   * Replace the schedule with `next` only if the row stored under `expected.id` still equals
   * `expected` (every field but the lease: `nextRunAt` as a time, `agentId` null or left out alike,
   * `payload` as JSON), checked atomically with the write: true when replaced, false (nothing
   * changed) when the row differs or is gone. A lease held on the row is kept. So two writers that
   * read one row and each change it never lose a change: the second gets false, reads again and
   * applies its change to what is stored. `next.id` must be `expected.id`. Optional: without it a
   * caller writes with `upsertSchedule`, and of two concurrent changes the last one written wins.
   */
  replaceSchedule?(expected: Omit<ScheduleRecord, "lease">, next: Omit<ScheduleRecord, "lease">): Promise<boolean>;
  /**
   * Delete the schedule stored under `expected.id` only if it still equals `expected` (compared as
   * `replaceSchedule` compares: every field but the lease), checked atomically with the delete:
   * true when deleted, false (nothing changed) when the row differs or is gone. So a writer that
   * read a row and decided to delete it never deletes another writer's row of the same id: one
   * changed since the read, or deleted and written again. Optional: without it a caller deletes
   * with `deleteSchedule`, whatever the row holds by then.
   */
  deleteScheduleIf?(expected: Omit<ScheduleRecord, "lease">): Promise<boolean>;
  getSchedule(id: string): Promise<ScheduleRecord | undefined>;
  /** Sorted by id, in code-point order (see compareCodePoints). */
  listSchedules(): Promise<ScheduleRecord[]>;
  /** Lease enabled schedules due at `now`; with `agentId`, only that agent's and those of no agent. */
  claimDueSchedules(options: ScheduleClaimOptions): Promise<ScheduleRecord[]>;
  /**
   * Release the lease and move the schedule to its next time; nothing when `owner` does not hold the
   * lease. With `claimedNextRunAt` (the row's `nextRunAt` as claimed), the move is made only if the row
   * still holds that time; with `claimed` (the row as claimed), only if the row still equals it, compared
   * as `replaceSchedule` compares (every field but the lease). Checked atomically with the write: an
   * edit made while the row was dispatched is kept, and only the lease is released: one that re-timed
   * it (an update, a pause or resume), and, with `claimed`, one that kept its due time (a new schedule
   * given once that time had passed), which the old schedule's next time would otherwise replace.
   * `claimed` came later than the rest: a store that ignores it keeps only the edits that re-timed the row.
   */
  completeScheduleRun(id: string, owner: string, nextRunAt: Date, claimedNextRunAt?: string, claimed?: Omit<ScheduleRecord, "lease">): Promise<void>;
  deleteSchedule(id: string): Promise<void>;
}

export interface FileRecord {
  /** Logical path under `/files`. */
  path: string;
  blobKey: string;
  size: number;
  contentType: string;
  sha256: string;
  runId: string | null;
  createdAt: string;
}

export interface FileListOptions {
  /** Only the records whose path starts with this; all of them when left out. */
  prefix?: string;
  /** Leave out the records whose path starts with this (the context's manifest of /files leaves out /files/attachments/). */
  excludePrefix?: string;
}

export interface FileIndexStore {
  putFileRecord(record: FileRecord): Promise<void>;
  getFileRecord(path: string): Promise<FileRecord | undefined>;
  /** Sorted by path, in code-point order (see compareCodePoints). */
  listFileRecords(options?: FileListOptions): Promise<FileRecord[]>;
  /**
   * The first `limit` records of `listFileRecords(options)` (a whole number, 0 or more), and how
   * many it has in all, in one read. Optional: the default context shows the first files of its
   * /files manifest and the count of the rest at every run start, and without this it lists them all.
   */
  firstFileRecords?(options: FileListOptions, limit: number): Promise<FileRecordPage>;
  deleteFileRecord(path: string): Promise<void>;
}

/** The first file records of a listing, and how many it has in all. */
export interface FileRecordPage {
  records: FileRecord[];
  total: number;
}

export interface UsageRecord {
  /** Unique per model call; recording the same id twice counts once. */
  id: string;
  runId: string;
  /** The conversation whose daily budgets count this call: the run's, or for a subagent's run its root run's (`SubagentParent.budgetConversationId`). */
  conversationId: string | null;
  provider: string;
  model: string;
  /** Prompt tokens neither read from nor written to the provider's cache (pi-ai's `usage.input`); the prompt is this plus the two cache counts. */
  inputTokens: number;
  outputTokens: number;
  /** Prompt tokens read from the provider's cache. */
  cacheReadTokens: number;
  /** Prompt tokens written to the provider's cache. */
  cacheWriteTokens: number;
  /** Cost in USD as the engine's catalog prices it. */
  costUsd: number;
  createdAt: string;
  /**
   * The agent of the run that made the call (`RunRecord.agentId`; a subagent's run's is
   * `<agent id>/<path>`), null when recorded without one. A store keeps what `recordUsage` was given
   * and lists it back; records kept before the field have none (null, or no such field).
   */
  agentId?: string | null;
}

/** Which usage records a listing holds; every given field must match. */
export interface UsageFilter {
  runId?: string;
  conversationId?: string;
  /**
   * Only the records of this agent and of its subagents (`isRunOfAgent`: the id itself, or one under
   * `<agentId>/`), and those recorded without an agent (written before the field). One store may hold
   * several agents' usage (e.g. one database), and two agents may serve the same conversation id (one
   * chat channel): a conversation's daily budgets count only the agent's own calls, its subagents'
   * included (their usage carries the root run's conversation id). Left out, every agent's records.
   */
  agentId?: string;
  /**
   * Only the records whose `createdAt` is at or after this time (ISO 8601; stores compare it as the
   * runtime writes times, `YYYY-MM-DDTHH:mm:ss.sssZ`, as `isUsageSince` does). A run's daily
   * budgets list the day's records only, so a conversation's long history is not read before every
   * model call.
   */
  since?: string;
}

/**
 * Whether `record` was recorded at or after `since` (`UsageFilter.since`; every record without it):
 * both read as times, so `...T10:00:00Z` and `...T10:00:00.000Z` are the same moment. A `createdAt`
 * that is no time is compared as text.
 */
export function isUsageSince(record: Pick<UsageRecord, "createdAt">, since: string | undefined): boolean {
  if (since === undefined) return true;
  const at = Date.parse(record.createdAt);
  const from = Date.parse(since);
  return Number.isFinite(at) && Number.isFinite(from) ? at >= from : record.createdAt >= since;
}

/**
 * Whether a listing scoped to `agentId` (`UsageFilter.agentId`) holds `record`: every record when no
 * agent is asked for; else that agent's and its subagents' (`isRunOfAgent`: "support" holds
 * "support/researcher" but not "support-eu"), and those recorded without one (`agentId` null, or no
 * such field in what a store kept before the field).
 */
export function isInUsageScope(record: Pick<UsageRecord, "agentId">, agentId: string | undefined): boolean {
  const owner = record.agentId ?? null;
  return agentId === undefined || owner === null || isRunOfAgent({ agentId: owner }, agentId);
}

/**
 * Model usage, read by run budgets and reports. The runtime records every call with its run's agent,
 * and a run's conversation budgets list with `agentId` (the run's root agent); over a store built
 * before it (one that lists every agent's records) the runtime drops the records of another agent.
 */
export interface UsageStore {
  recordUsage(record: UsageRecord): Promise<void>;
  /** In the order first recorded; with `agentId`, see `UsageFilter`. */
  listUsage(filter: UsageFilter): Promise<UsageRecord[]>;
}

export interface SandboxSessionRecord {
  /** Usually the run id (one sandbox per run). */
  key: string;
  adapter: string;
  sessionId: string;
  data: JsonValue;
  createdAt: string;
  updatedAt: string;
}

export interface SandboxSessionStore {
  getSandboxSession(key: string): Promise<SandboxSessionRecord | undefined>;
  putSandboxSession(record: SandboxSessionRecord): Promise<void>;
  deleteSandboxSession(key: string): Promise<void>;
  /** Sorted by key, in code-point order (see compareCodePoints). */
  listSandboxSessions(): Promise<SandboxSessionRecord[]>;
}

export interface MemoryRecord {
  path: string;
  content: string;
  updatedAt: string;
}

/** A memory file as a listing shows it. */
export interface MemoryEntry {
  path: string;
  /** The content's length in UTF-8 bytes. */
  size: number;
}

export interface MemoryStateStore {
  readMemory(path: string): Promise<MemoryRecord | undefined>;
  writeMemory(path: string, content: string): Promise<void>;
  /** Paths under `prefix`, sorted in code-point order (see compareCodePoints). */
  listMemory(prefix?: string): Promise<string[]>;
  /**
   * The paths of `listMemory` with their sizes, in one read. Optional: without it
   * the runtime reads each file to size it, which costs a read per file on every
   * run whose context shows the memory.
   */
  listMemoryEntries?(prefix?: string): Promise<MemoryEntry[]>;
  /**
   * The first `limit` entries of `listMemoryEntries` (a whole number, 0 or more), and how many
   * files are under `prefix` in all, in one read. Optional: the default context shows the first
   * files of /memory and the count of the rest at every run start, and without this it lists
   * every file to show them.
   */
  firstMemoryEntries?(prefix: string | undefined, limit: number): Promise<MemoryPage>;
  deleteMemory(path: string): Promise<void>;
}

/** The first memory files under a prefix, and how many there are in all. */
export interface MemoryPage {
  entries: MemoryEntry[];
  total: number;
}

export interface SettingAuditEvent {
  id: string;
  key: string;
  value: JsonValue;
  previous: JsonValue | null;
  actor: string;
  reason: string | null;
  createdAt: string;
}

/** Agent-level operator settings and their control-plane audit trail. */
export interface RuntimeSettingsStore {
  getSetting(key: string): Promise<JsonValue | undefined>;
  /** Write the value and its audit event atomically. */
  putSetting(key: string, value: JsonValue, audit: { actor: string; reason?: string }): Promise<SettingAuditEvent>;
  /** Newest first; `limit` a whole number >= 0, else refused (AL_ERR_STATE_INPUT_INVALID). */
  listSettingAudit(options?: { key?: string; limit?: number }): Promise<SettingAuditEvent[]>;
}
