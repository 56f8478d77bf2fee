import {
  type CreateRunOptions,
  type CreatedRun,
  type ReleaseOptions,
  AssemblyLineError,
  checkConversationAppend,
  checkFileRecord,
  checkLeaseOwner,
  checkListLimit,
  checkMemoryWrite,
  checkNewEvents,
  checkNewRun,
  checkObservedSeq,
  checkScheduleClaimed,
  checkScheduleDeleteIf,
  checkScheduleInput,
  checkScheduleReplace,
  checkSeqNumber,
  checkSettingWrite,
  checkedDate,
  checkedTimeText,
  checkedUsageRecord,
  definedStateValue,
  asStoredJson,
  copyStateValue,
  fenceHolds,
  staleFenceError,
  TERMINAL_RUN_STATUSES,
  type CheckpointRecord,
  type ClaimOptions,
  type ConversationMessage,
  type ConversationScope,
  type DeliveryRecord,
  type FailDeliveryOptions,
  type FileRecord,
  type FileRecordPage,
  type JsonValue,
  type MemoryEntry,
  type MemoryPage,
  type MemoryRecord,
  type NewRun,
  type NewRunEvent,
  type AppendOptions,
  type RunEvent,
  type RunFence,
  type RunLease,
  type TakenRunLease,
  type ClaimedRunRecord,
  type Lease,
  type RunListFilter,
  type RunPage,
  type RunRecord,
  type RunStateChange,
  type SandboxSessionRecord,
  type ScheduleClaimOptions,
  type ScheduleRecord,
  type SettingAuditEvent,
  type SkillRecord,
  type StateAdapter,
  type StepRecord,
  type ToolCallRecord,
  type UsageFilter,
  type UsageRecord,
  isoTimestamp,
  leaseExpiresAt,
  isClaimableBy,
  isLeaseFree,
  isSameSchedule,
  isScheduleClaimableBy,
  isInConversationScope,
  RunsInCreationOrder,
  PendingDeliveries,
  UsageRecords,
  RecordsByPath,
  compareCodePoints,
  MemoryRecordsByPath,
  type FileListOptions,
} from "@assemblyline-agents/core";
import { randomUUID } from "node:crypto";
import { InMemorySkillStore } from "./in-memory-skills.js";

/** How many records one claim call leases when the caller gives no limit. */
const DEFAULT_CLAIM_LIMIT = 100;

interface StoredRun {
  record: RunRecord;
  /** Creation order; listRuns pages by it so equal timestamps still order stably. */
  ordinal: number;
  /** Each event's type and data as JSON text (`eventText`); id, run id and seq follow from its index. */
  events: string[];
  /**
   * Each event's time, beside its text: the events of one append share one time, so they share
   * one string here instead of each text repeating its 24 characters.
   */
  eventTimes: string[];
  /** Tool calls and steps as the JSON text of their record without its run id, which is the run's. */
  toolCalls: Map<string, string>;
  steps: Map<string, string>;
  checkpoint: CheckpointRecord | undefined;
  deliveryIds: string[];
  /** The highest fencing token ever issued for this run; survives releases. */
  fence: number;
}

/** Every returned value is a private copy; every stored one is its JSON form (asStoredJson), as a durable state reads it back. */
const copy = <T>(value: T): T => copyStateValue(value);

/**
 * Rows a run only appends or replaces whole (events, tool calls, steps) are kept
 * as JSON text: one string per row instead of a tree of objects, which the
 * garbage collector copies and scans on every young-generation collection while
 * the store grows (about a third of a run's CPU when they were objects). JSON is also
 * what the durable stores keep, so a value reads back here as it does there.
 */
function toText(value: unknown): string {
  try {
    return flat(JSON.stringify(value));
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", "a value written to the in-memory state is not JSON", {
      fix: "Store only JSON values (no BigInt, no cycles); convert dates and buffers to strings first.",
      cause: error,
    });
  }
}

/**
 * V8 builds a JSON.stringify result of more than a few dozen characters as a tree
 * of string pieces; kept that way, each piece is one more object for the garbage
 * collector. Converting the text to a number (NaN: it starts with `{`) makes V8
 * flatten it into one string, and the collector then drops the pieces.
 */
function flat(text: string): string {
  Number(text);
  return text;
}

const fromText = <T>(text: string): T => JSON.parse(text) as T;

const eventText = (type: string, data: unknown): string => toText({ type, data });

function eventFromText(runId: string, index: number, text: string, createdAt: string): RunEvent {
  const { type, data } = fromText<Pick<RunEvent, "type" | "data">>(text);
  const seq = index + 1;
  return { id: `${runId}:${seq}`, runId, seq, type, data, createdAt };
}

/** The text a tool call or step is kept as: its record without the run id (see `withRunId`). */
function rowText(row: { runId?: string }): string {
  // JSON leaves out a field that is undefined: cheaper than a copy without the key.
  return toText({ ...row, runId: undefined });
}

/** A tool call or step read back from its text, with its run's id first, as records are written. */
const withRunId = <T>(runId: string, text: string): T => ({ runId, ...fromText<object>(text) }) as T;

const isoOf = (now: Date | undefined): string => isoTimestamp(now?.getTime());

const claimLimit = (limit: number | undefined): number => Math.max(0, limit ?? DEFAULT_CLAIM_LIMIT);

/**
 * A complete state adapter held in process memory: every facet, for tests, the
 * scripted durability suites, and hosts that accept losing state on exit.
 *
 * Each method does its reads and writes without awaiting in between, so every
 * call is atomic with respect to every other call on the same instance.
 * Events, tool calls and steps are kept as JSON text, so they read back as the
 * durable stores give them back (a Date as its ISO string, undefined fields
 * left out); a value JSON cannot hold (a BigInt, a cycle) is refused with
 * AL_ERR_STATE_INPUT_INVALID before anything is written. Every write goes through core's input
 * checks where the file state and PostgreSQL make them, so all three refuse the same input with the
 * same message, and times (a usage record's createdAt, a schedule's nextRunAt) are kept as ISO UTC.
 * Step keys are insert-once: a second write of the same key keeps the first.
 * completeDelivery/failDelivery/completeScheduleRun from an owner that does not
 * hold the lease are ignored, so a worker whose lease was taken over cannot
 * undo the new holder's work; a fenced appendEvents whose token is no longer the
 * run's is refused in the same synchronous section as the write.
 */
export class InMemoryStateAdapter implements StateAdapter {
  private readonly runs = new Map<string, StoredRun>();
  /** The same runs in creation order, which listRuns pages through from the newest. */
  private readonly runOrder = new RunsInCreationOrder<StoredRun>();
  private readonly runIdByIdempotencyKey = new Map<string, string>();
  private readonly deliveries = new Map<string, DeliveryRecord>();
  /** The deliveries still pending, by when they are due: a claim looks at the due ones, not at every delivery ever made. */
  private readonly pendingDeliveries = new PendingDeliveries();
  private readonly conversations = new Map<string, ConversationMessage[]>();
  private readonly schedules = new Map<string, ScheduleRecord>();
  private readonly files = new RecordsByPath<FileRecord>();
  private readonly usage = new UsageRecords();
  private readonly sandboxSessions = new Map<string, SandboxSessionRecord>();
  private readonly memory = new MemoryRecordsByPath();
  private readonly settings = new Map<string, JsonValue>();
  private readonly settingAudit: SettingAuditEvent[] = [];
  private nextOrdinal = 1;

  // ---- runs ----------------------------------------------------------------

  async createRun(run: NewRun, options: CreateRunOptions = {}): Promise<CreatedRun> {
    checkNewRun("createRun", run, options);
    const existingId =
      run.idempotencyKey !== undefined ? this.runIdByIdempotencyKey.get(run.idempotencyKey) : undefined;
    const existing = this.runs.get(existingId ?? run.id);
    if (existing) return { run: copy(existing.record), created: false };
    const nowMs = Date.now();
    const leaseExpiry = options.lease ? leaseExpiresAt("createRun", "options.lease.ttlMs", nowMs, options.lease.ttlMs) : undefined;
    const now = isoTimestamp(nowMs);
    const input = asStoredJson(run.input, `createRun(run "${run.id}")`);
    const record: RunRecord = {
      id: run.id,
      agentId: run.agentId,
      agentRevision: run.agentRevision,
      conversationId: run.conversationId ?? null,
      status: run.status ?? "queued",
      modelSpec: run.modelSpec,
      input,
      output: null,
      error: null,
      lastSeq: 1,
      observedSeq: 0,
      lease: null,
      createdAt: now,
      updatedAt: now,
    };
    const created: RunEvent = {
      id: `${run.id}:1`,
      runId: run.id,
      seq: 1,
      type: "run.created",
      data: {
        agentId: record.agentId,
        agentRevision: record.agentRevision,
        conversationId: record.conversationId,
        modelSpec: record.modelSpec,
        status: record.status,
        input: copy(input) as unknown as JsonValue,
      },
      createdAt: now,
    };
    if (options.lease) record.lease = { owner: options.lease.owner, expiresAt: leaseExpiry!, token: 1 };
    const stored: StoredRun = {
      record,
      ordinal: this.nextOrdinal++,
      events: [eventText(created.type, created.data)],
      eventTimes: [now],
      toolCalls: new Map(),
      steps: new Map(),
      checkpoint: undefined,
      deliveryIds: [],
      fence: options.lease ? 1 : 0,
    };
    this.runs.set(run.id, stored);
    this.runOrder.add(stored);
    if (run.idempotencyKey !== undefined) this.runIdByIdempotencyKey.set(run.idempotencyKey, run.id);
    return { run: copy(record), created: true, createdEvent: created };
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const stored = this.runs.get(runId);
    return stored ? copy(stored.record) : undefined;
  }

  async listRuns(filter: RunListFilter = {}): Promise<RunPage> {
    const { runs, nextCursor } = this.runOrder.page(filter);
    return { runs: runs.map(({ record }) => copy(record)), nextCursor };
  }

  async appendEvents(
    runId: string,
    events: NewRunEvent[],
    change?: RunStateChange,
    options: AppendOptions = {},
  ): Promise<RunEvent[]> {
    if (options.expectedLastSeq !== undefined) checkSeqNumber(`appendEvents(run "${runId}")`, "options.expectedLastSeq", options.expectedLastSeq);
    const stored = this.requireRun(runId);
    const { record } = stored;
    if (options.fence && !fenceHolds(record.lease, options.fence)) throw staleFenceError(runId, options.fence, record.lease);
    if (options.expectedLastSeq !== undefined && options.expectedLastSeq !== record.lastSeq) {
      throw new AssemblyLineError(
        "AL_ERR_EVENT_SEQ",
        `run ${runId} is at seq ${record.lastSeq}, but the append expected seq ${options.expectedLastSeq}`,
        {
          fix: "Another writer appended to this run; reload it and decide again, or hold the run's lease while writing.",
          details: { runId, lastSeq: record.lastSeq, expectedLastSeq: options.expectedLastSeq },
        },
      );
    }

    checkNewEvents(`appendEvents(run "${runId}")`, events);
    checkObservedSeq(`appendEvents(run "${runId}")`, "options.observedSeq", options.observedSeq, record.lastSeq + events.length);

    // Copy and serialize everything first: a value that cannot be stored throws before anything changes.
    const now = isoTimestamp();
    const appended: RunEvent[] = events.map((event, index) => {
      const seq = record.lastSeq + index + 1;
      return { id: `${runId}:${seq}`, runId, seq, type: event.type, data: asStoredJson(event.data ?? {}, `appendEvents(run "${runId}")`), createdAt: now };
    });
    const texts = appended.map((event) => eventText(event.type, event.data));
    const next = change === undefined ? undefined : storedChange(runId, change, stored.steps);

    for (const text of texts) {
      stored.events.push(text);
      stored.eventTimes.push(now);
    }
    record.lastSeq += appended.length;
    record.updatedAt = now;
    if (next) this.applyChange(stored, next, now);
    if (options.observedSeq !== undefined && options.observedSeq > record.observedSeq) record.observedSeq = options.observedSeq;
    // The appended events were built here and are kept only as text: the caller gets them as they are.
    return appended;
  }

  async listEvents(runId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<RunEvent[]> {
    const operation = `listEvents(run "${runId}")`;
    if (options.limit !== undefined) checkListLimit(options.limit, operation);
    if (options.afterSeq !== undefined) checkSeqNumber(operation, "options.afterSeq", options.afterSeq);
    const stored = this.runs.get(runId);
    if (!stored) return [];
    // Seqs are contiguous from 1, so the event with seq n sits at index n - 1.
    const start = Math.min(stored.events.length, options.afterSeq ?? 0);
    const end = options.limit === undefined ? stored.events.length : Math.min(stored.events.length, start + options.limit);
    const listed: RunEvent[] = [];
    for (let index = start; index < end; index++) listed.push(eventFromText(runId, index, stored.events[index]!, stored.eventTimes[index]!));
    return listed;
  }

  async markObserved(runId: string, seq: number): Promise<void> {
    const { record } = this.requireRun(runId);
    checkObservedSeq(`markObserved(run "${runId}")`, "seq", seq, record.lastSeq);
    if (seq > record.observedSeq) record.observedSeq = seq;
  }

  async getToolCall(runId: string, callId: string): Promise<ToolCallRecord | undefined> {
    const call = this.runs.get(runId)?.toolCalls.get(callId);
    return call === undefined ? undefined : withRunId<ToolCallRecord>(runId, call);
  }

  async listToolCalls(runId: string): Promise<ToolCallRecord[]> {
    return [...(this.runs.get(runId)?.toolCalls.values() ?? [])].map((call) => withRunId<ToolCallRecord>(runId, call));
  }

  async getStep(runId: string, key: string): Promise<StepRecord | undefined> {
    const step = this.runs.get(runId)?.steps.get(key);
    return step === undefined ? undefined : withRunId<StepRecord>(runId, step);
  }

  async getCheckpoint(runId: string): Promise<CheckpointRecord | undefined> {
    const checkpoint = this.runs.get(runId)?.checkpoint;
    return checkpoint ? copy(checkpoint) : undefined;
  }

  async acquireRunLease(runId: string, owner: string, ttlMs: number, now?: Date): Promise<TakenRunLease | null> {
    const stored = this.requireRun(runId);
    const { record } = stored;
    const at = now ?? new Date();
    checkLeaseOwner(`acquireRunLease(run "${runId}")`, "owner", owner);
    const expiresAt = leaseExpiresAt(`acquireRunLease(run "${runId}")`, "ttlMs", at.getTime(), ttlMs);
    if (TERMINAL_RUN_STATUSES.includes(record.status)) return null;
    if (record.lease && record.lease.owner !== owner && !isLeaseFree(record.lease, at)) return null;
    const replaced = replacedLease(record.lease);
    stored.fence += 1;
    record.lease = { owner, expiresAt, token: stored.fence };
    return { ...copy(record.lease), ...replaced };
  }

  async renewRunLease(runId: string, fence: RunFence, ttlMs: number, now?: Date): Promise<RunLease | null> {
    const { record } = this.requireRun(runId);
    const expiresAt = leaseExpiresAt(`renewRunLease(run "${runId}")`, "ttlMs", (now ?? new Date()).getTime(), ttlMs);
    if (TERMINAL_RUN_STATUSES.includes(record.status) || !fenceHolds(record.lease, fence)) return null;
    record.lease = { owner: fence.owner, expiresAt, token: fence.token };
    return copy(record.lease);
  }

  async releaseRunLease(runId: string, owner: string, token?: number, options: ReleaseOptions = {}): Promise<void> {
    const record = this.runs.get(runId)?.record;
    if (record) checkObservedSeq(`releaseRunLease(run "${runId}")`, "options.observedSeq", options.observedSeq, record.lastSeq);
    if (record?.lease?.owner === owner && (token === undefined || record.lease.token === token)) record.lease = null;
    if (record && options.observedSeq !== undefined && options.observedSeq > record.observedSeq) record.observedSeq = options.observedSeq;
  }

  async claimRecoverableRuns(options: ClaimOptions): Promise<ClaimedRunRecord[]> {
    const at = options.now ?? new Date();
    checkLeaseOwner("claimRecoverableRuns", "options.owner", options.owner);
    const expiresAt = leaseExpiresAt("claimRecoverableRuns", "options.ttlMs", at.getTime(), options.ttlMs);
    const { agentId } = options;
    const claimed = this.runOrder.oldestUnfinished(
      ({ record }) =>
        (record.status === "queued" || record.status === "running") && isLeaseFree(record.lease, at) && isClaimableBy(record, agentId),
      claimLimit(options.limit),
    );
    return claimed.map((stored) => {
      const replaced = replacedLease(stored.record.lease);
      stored.fence += 1;
      stored.record.lease = { owner: options.owner, expiresAt, token: stored.fence };
      return { ...copy(stored.record), ...(replaced.replaced ? { replacedLease: replaced.replaced } : {}) };
    });
  }

  async listDeliveries(runId: string): Promise<DeliveryRecord[]> {
    const ids = this.runs.get(runId)?.deliveryIds ?? [];
    return ids.flatMap((id) => {
      const delivery = this.deliveries.get(id);
      return delivery ? [copy(delivery)] : [];
    });
  }

  async claimDeliveries(options: ClaimOptions): Promise<DeliveryRecord[]> {
    const at = options.now ?? new Date();
    checkLeaseOwner("claimDeliveries", "options.owner", options.owner);
    const lease = { owner: options.owner, expiresAt: leaseExpiresAt("claimDeliveries", "options.ttlMs", at.getTime(), options.ttlMs) };
    const { agentId } = options;
    // Another agent's reply is skipped before the limit, so it never uses up this agent's claim.
    const claimed = this.pendingDeliveries.due(
      at.getTime(),
      (record) => isLeaseFree(record.lease, at) && isClaimableBy(this.runs.get(record.runId)?.record, agentId),
      claimLimit(options.limit),
    );
    for (const record of claimed) {
      // Counted when claimed, not when settled: a sender that dies mid-attempt (out of memory, SIGKILL) still used it up.
      record.attempts += 1;
      record.lease = { ...lease };
      record.updatedAt = at.toISOString();
    }
    return claimed.map((record) => copy(record));
  }

  async completeDelivery(deliveryId: string, owner: string): Promise<void> {
    const record = this.deliveries.get(deliveryId);
    if (!record || record.status !== "pending" || record.lease?.owner !== owner) return;
    record.status = "delivered";
    this.pendingDeliveries.delete(deliveryId);
    record.lease = null;
    record.lastError = null;
    record.updatedAt = isoTimestamp();
  }

  async failDelivery(deliveryId: string, owner: string, error: string, retryAt?: Date, options: FailDeliveryOptions = {}): Promise<void> {
    const record = this.deliveries.get(deliveryId);
    if (!record || record.status !== "pending" || record.lease?.owner !== owner) return;
    // Only an explicit false gives it back: a value mistaken for one never under-counts.
    if (options.countAttempt === false) record.attempts = Math.max(0, record.attempts - 1);
    record.lastError = error;
    record.lease = null;
    record.updatedAt = isoTimestamp();
    if (retryAt) record.availableAt = retryAt.toISOString();
    else record.status = "failed";
    this.pendingDeliveries.put(record);
  }

  // ---- conversations ---------------------------------------------------------

  async appendConversationMessages(conversationId: string, messages: ConversationMessage[], options: ConversationScope = {}): Promise<void> {
    checkConversationAppend(`appendConversationMessages(conversation "${conversationId}")`, conversationId, messages, options);
    const agentId = options.agentId ?? null;
    const copies = messages.map((message) => ({ ...asStoredJson(message, `appendConversationMessages("${conversationId}")`), agentId }));
    const list = this.conversations.get(conversationId) ?? [];
    list.push(...copies);
    this.conversations.set(conversationId, list);
  }

  async listConversationMessages(
    conversationId: string,
    options: { limit?: number } & ConversationScope = {},
  ): Promise<ConversationMessage[]> {
    const { agentId, limit } = options;
    if (limit !== undefined) checkListLimit(limit, `listConversationMessages(conversation "${conversationId}")`);
    const all = this.conversations.get(conversationId) ?? [];
    // Filtered before the limit, so another agent's messages never use it up.
    const list = agentId === undefined ? all : all.filter((message) => isInConversationScope(message, agentId));
    // slice(-0) would return everything, so a zero limit is handled on its own.
    const tail = limit === undefined ? list : limit === 0 ? [] : list.slice(-limit);
    return tail.map(copy);
  }

  // ---- schedules -------------------------------------------------------------

  async upsertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<void> {
    // Kept as an ISO UTC time, as PostgreSQL gives it back.
    const nextRunAt = checkScheduleInput("upsertSchedule", schedule);
    const lease = this.schedules.get(schedule.id)?.lease ?? null;
    this.schedules.set(schedule.id, { ...asStoredJson(schedule, `upsertSchedule("${schedule.id}")`), nextRunAt, lease });
  }

  async insertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    const nextRunAt = checkScheduleInput("insertSchedule", schedule);
    if (this.schedules.has(schedule.id)) return false;
    this.schedules.set(schedule.id, { ...asStoredJson(schedule, `insertSchedule("${schedule.id}")`), nextRunAt, lease: null });
    return true;
  }

  async replaceSchedule(expected: Omit<ScheduleRecord, "lease">, next: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    checkScheduleReplace(expected, next);
    const stored = this.schedules.get(expected.id);
    if (!stored || !isSameSchedule(stored, expected)) return false;
    // Written by upsertSchedule (which keeps the lease) in this same synchronous step, so nothing
    // runs between the check and the write, and a subclass that wraps upsertSchedule (a test's
    // fault injection) sees the replace as the write it is.
    await this.upsertSchedule(next);
    return true;
  }

  async deleteScheduleIf(expected: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    checkScheduleDeleteIf(expected);
    const stored = this.schedules.get(expected.id);
    if (!stored || !isSameSchedule(stored, expected)) return false;
    // Deleted by deleteSchedule in this same synchronous step, as replaceSchedule writes: nothing
    // runs between the check and the delete, and a subclass that wraps deleteSchedule sees it.
    await this.deleteSchedule(expected.id);
    return true;
  }

  async getSchedule(id: string): Promise<ScheduleRecord | undefined> {
    const schedule = this.schedules.get(id);
    return schedule ? copy(schedule) : undefined;
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    return [...this.schedules.values()].sort((a, b) => compareCodePoints(a.id, b.id)).map(copy);
  }

  async claimDueSchedules(options: ScheduleClaimOptions): Promise<ScheduleRecord[]> {
    const at = options.now ?? new Date();
    checkLeaseOwner("claimDueSchedules", "options.owner", options.owner);
    const expiresAt = leaseExpiresAt("claimDueSchedules", "options.ttlMs", at.getTime(), options.ttlMs);
    const claimed = [...this.schedules.values()]
      .filter((s) => s.enabled && Date.parse(s.nextRunAt) <= at.getTime() && isLeaseFree(s.lease, at) && isScheduleClaimableBy(s, options.agentId))
      .sort((a, b) => Date.parse(a.nextRunAt) - Date.parse(b.nextRunAt) || compareCodePoints(a.id, b.id))
      .slice(0, claimLimit(options.limit));
    for (const schedule of claimed) schedule.lease = { owner: options.owner, expiresAt };
    return claimed.map(copy);
  }

  async completeScheduleRun(id: string, owner: string, nextRunAt: Date, claimedNextRunAt?: string, claimed?: Omit<ScheduleRecord, "lease">): Promise<void> {
    // Checked before the lease is touched: a refused time leaves the holder its lease.
    const operation = `completeScheduleRun(schedule "${id}")`;
    const next = checkedDate(operation, "nextRunAt", nextRunAt);
    const claimedTime = claimedNextRunAt === undefined ? undefined : checkedTimeText(operation, "claimedNextRunAt", claimedNextRunAt);
    checkScheduleClaimed(operation, id, claimed);
    const schedule = this.schedules.get(id);
    if (!schedule || schedule.lease?.owner !== owner) return;
    schedule.lease = null;
    // An edit made during the dispatch is kept: the row moves only as it was claimed.
    const unchanged = (claimedTime === undefined || Date.parse(schedule.nextRunAt) === claimedTime) && (claimed === undefined || isSameSchedule(schedule, claimed));
    if (unchanged) schedule.nextRunAt = next;
  }

  async deleteSchedule(id: string): Promise<void> {
    this.schedules.delete(id);
  }

  // ---- files -----------------------------------------------------------------

  async putFileRecord(record: FileRecord): Promise<void> {
    checkFileRecord("putFileRecord", record);
    this.files.set(record.path, asStoredJson(record, `putFileRecord("${record.path}")`));
  }

  async getFileRecord(path: string): Promise<FileRecord | undefined> {
    const record = this.files.get(path);
    return record ? copy(record) : undefined;
  }

  async listFileRecords(options: FileListOptions = {}): Promise<FileRecord[]> {
    return this.files.list(options).map(copy);
  }

  async firstFileRecords(options: FileListOptions, limit: number): Promise<FileRecordPage> {
    const { records, total } = this.files.page(options, limit, "firstFileRecords");
    return { records: records.map(copy), total };
  }

  async deleteFileRecord(path: string): Promise<void> {
    this.files.delete(path);
  }

  // ---- usage -----------------------------------------------------------------

  async recordUsage(record: UsageRecord): Promise<void> {
    // Kept with createdAt as an ISO UTC time, as PostgreSQL keeps it.
    const checked = checkedUsageRecord("recordUsage", record);
    if (!this.usage.has(checked.id)) this.usage.put(asStoredJson(checked, `recordUsage("${checked.id}")`));
  }

  async listUsage(filter: UsageFilter): Promise<UsageRecord[]> {
    return this.usage.list(filter).map(copy);
  }

  // ---- sandbox sessions ------------------------------------------------------

  async getSandboxSession(key: string): Promise<SandboxSessionRecord | undefined> {
    const record = this.sandboxSessions.get(key);
    return record ? copy(record) : undefined;
  }

  async putSandboxSession(record: SandboxSessionRecord): Promise<void> {
    definedStateValue(`putSandboxSession(key "${record.key}")`, "record.data", record.data);
    this.sandboxSessions.set(record.key, asStoredJson(record, `putSandboxSession("${record.key}")`));
  }

  async deleteSandboxSession(key: string): Promise<void> {
    this.sandboxSessions.delete(key);
  }

  async listSandboxSessions(): Promise<SandboxSessionRecord[]> {
    return [...this.sandboxSessions.values()].sort((a, b) => compareCodePoints(a.key, b.key)).map(copy);
  }

  // ---- memory ----------------------------------------------------------------

  async readMemory(path: string): Promise<MemoryRecord | undefined> {
    const record = this.memory.get(path);
    return record ? copy(record) : undefined;
  }

  async writeMemory(path: string, content: string): Promise<void> {
    checkMemoryWrite(path, content);
    this.memory.set(path, { path, content, updatedAt: isoTimestamp() });
  }

  async listMemory(prefix = ""): Promise<string[]> {
    return this.memory.listPaths({ prefix });
  }

  async listMemoryEntries(prefix = ""): Promise<MemoryEntry[]> {
    return this.memory.entries(prefix);
  }

  async firstMemoryEntries(prefix: string | undefined, limit: number): Promise<MemoryPage> {
    return this.memory.first(prefix ?? "", limit, "firstMemoryEntries");
  }

  async deleteMemory(path: string): Promise<void> {
    this.memory.delete(path);
  }

  // ---- settings --------------------------------------------------------------

  async getSetting(key: string): Promise<JsonValue | undefined> {
    return this.settings.has(key) ? copy(this.settings.get(key)) : undefined;
  }

  async putSetting(key: string, value: JsonValue, audit: { actor: string; reason?: string }): Promise<SettingAuditEvent> {
    checkSettingWrite(`putSetting(key "${key}")`, key, value, audit);
    const stored = asStoredJson(value, `putSetting(key "${key}")`);
    const event: SettingAuditEvent = {
      id: randomUUID(),
      key,
      value: copy(stored),
      previous: this.settings.has(key) ? copy(this.settings.get(key) ?? null) : null,
      actor: audit.actor,
      reason: audit.reason ?? null,
      createdAt: isoTimestamp(),
    };
    this.settings.set(key, stored);
    this.settingAudit.push(event);
    return copy(event);
  }

  async listSettingAudit(options: { key?: string; limit?: number } = {}): Promise<SettingAuditEvent[]> {
    if (options.limit !== undefined) checkListLimit(options.limit, "listSettingAudit");
    const newestFirst = this.settingAudit.filter((event) => options.key === undefined || event.key === options.key).reverse();
    return newestFirst.slice(0, options.limit).map(copy);
  }

  // ---- skills (kept in their own store; see in-memory-skills.ts) ---------------

  private readonly skillStore = new InMemorySkillStore();
  getSkill(agentId: string, name: string): Promise<SkillRecord | undefined> {
    return this.skillStore.getSkill(agentId, name);
  }
  listSkills(agentId: string): Promise<SkillRecord[]> {
    return this.skillStore.listSkills(agentId);
  }
  putSkill(record: SkillRecord, options: { expectedDigest: string | null }): Promise<boolean> {
    return this.skillStore.putSkill(record, options);
  }
  deleteSkill(agentId: string, name: string, options: { expectedDigest: string }): Promise<boolean> {
    return this.skillStore.deleteSkill(agentId, name, options);
  }

  async close(): Promise<void> {}

  // ---- internals -------------------------------------------------------------

  private requireRun(runId: string): StoredRun {
    const stored = this.runs.get(runId);
    if (stored) return stored;
    throw new AssemblyLineError("AL_ERR_RUN_NOT_FOUND", `no run with id "${runId}" exists in the in-memory state`, {
      fix: "Create the run with createRun before writing to it, and check the run id.",
      details: { runId },
    });
  }

  /** Apply a change made ready by `storedChange`; the caller has validated everything that can fail. */
  private applyChange(stored: StoredRun, change: StoredChange, now: string): void {
    const { record } = stored;
    if (change.run) {
      const { status, modelSpec, output, error, conversationId } = change.run;
      if (status !== undefined && status !== record.status) {
        record.status = status;
        this.runOrder.statusChanged(stored);
      }
      if (modelSpec !== undefined) record.modelSpec = modelSpec;
      if (output !== undefined) record.output = output;
      if (error !== undefined) record.error = error;
      if (conversationId !== undefined) record.conversationId = conversationId;
    }
    if (change.toolCall) stored.toolCalls.set(change.toolCall.callId, change.toolCall.text);
    if (change.step) stored.steps.set(change.step.key, change.step.text);
    if (change.checkpoint !== undefined) {
      stored.checkpoint = change.checkpoint === null ? undefined : { ...change.checkpoint, runId: record.id };
    }
    if (change.delivery && !this.deliveries.has(change.delivery.id)) {
      const delivery: DeliveryRecord = {
        id: change.delivery.id,
        runId: record.id,
        channel: change.delivery.channel,
        conversationId: change.delivery.conversationId ?? null,
        payload: change.delivery.payload,
        status: "pending",
        attempts: 0,
        availableAt: now,
        lastError: null,
        lease: null,
        createdAt: now,
        updatedAt: now,
      };
      this.deliveries.set(delivery.id, delivery);
      this.pendingDeliveries.put(delivery);
      stored.deliveryIds.push(delivery.id);
    }
  }
}

/** A run state change with its tool call and a new step already as stored text, the rest copied. */
interface StoredChange extends Omit<RunStateChange, "toolCall" | "step"> {
  toolCall?: { callId: string; text: string };
  step?: { key: string; text: string };
}

/**
 * Copy or serialize every part of `change`, throwing before anything is written; tool calls and steps are kept
 * without their run id, which reads back as the run's.
 * A step whose key the run already has is left out: step keys are insert-once.
 */
function storedChange(runId: string, change: RunStateChange, steps: ReadonlyMap<string, string>): StoredChange {
  const { toolCall, step, ...rest } = change;
  const ready: StoredChange = asStoredJson(rest, `appendEvents(run "${runId}")`);
  if (toolCall) ready.toolCall = { callId: toolCall.callId, text: rowText(toolCall) };
  if (step && !steps.has(step.key)) ready.step = { key: step.key, text: rowText(step) };
  return ready;
}

/** The lease a take replaces, as `TakenRunLease.replaced` reports it: nothing when the run had none. */
function replacedLease(lease: RunLease | null): { replaced?: Lease } {
  return lease ? { replaced: { owner: lease.owner, expiresAt: lease.expiresAt } } : {};
}
