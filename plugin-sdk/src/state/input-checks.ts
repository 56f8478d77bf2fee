import { AssemblyLineError } from "../errors.js";
import type { NewRunEvent } from "../events.js";
import type { ConversationMessage, ConversationScope, FileRecord, ScheduleRecord, UsageRecord } from "./facets.js";
import { isoTimestamp } from "./iso-time.js";
import { RUN_STATUSES, type CreateRunOptions, type NewRun, type RunListFilter } from "./runs.js";

/*
 * Checks of the arguments a state method writes, run before anything changes: a value the state
 * contract does not allow is refused with AL_ERR_STATE_INPUT_INVALID naming the method and the
 * field, instead of being stored and misread later: one wording for every store (the runtime's
 * in-memory state, the file state, PostgreSQL), so a caller meets the same refusal on each.
 */

/** Refuse `value` for `field` of `operation`, saying what was expected. */
export function refuseStateInput(operation: string, field: string, expected: string, value: unknown): never {
  throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `${operation}: ${field} must be ${expected}, got ${describeStateValue(value)}`, {
    fix: "Pass values shaped as the state contract in @assemblyline-agents/core describes.",
    details: { operation, field },
  });
}

/** A value as an error message shows it: a Date, an Invalid Date, NaN and ±Infinity as what they are. */
export function describeStateValue(value: unknown): string {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "an Invalid Date" : `the Date ${value.toISOString()}`;
  if (typeof value === "number" || typeof value === "bigint" || value === undefined) return String(value);
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** Refuse an undefined JSON value: JSON would drop the field (a store keeps null for none). */
export function definedStateValue<T>(operation: string, field: string, value: T | undefined): T {
  return value === undefined ? refuseStateInput(operation, field, "a JSON value (null for none)", value) : value;
}

/**
 * Refuse an observer position past the run's log (`lastSeq`, after the write's own events):
 * observers cannot have seen events it does not hold, and `observedSeq` never moves back, so the
 * events appended later would never be observed.
 */
export function checkObservedSeq(operation: string, field: string, seq: number | undefined, lastSeq: number): void {
  if (seq === undefined) return;
  checkSeqNumber(operation, field, seq);
  if (seq > lastSeq) refuseStateInput(operation, field, `at most the run's lastSeq (${lastSeq})`, seq);
}

/**
 * Refuse a position in a run's log (an observer's, an append's `expectedLastSeq`) that is not a
 * whole number >= 0: seqs are whole, and a fraction was kept as given by one store, cut down by
 * another and refused by PostgreSQL's cast as a failed query.
 */
export function checkSeqNumber(operation: string, field: string, seq: unknown): void {
  if (!Number.isSafeInteger(seq) || (seq as number) < 0) refuseStateInput(operation, field, "a whole number >= 0", seq);
}

/** `value` as an ISO time when it is a Date that holds one; else refused. */
export function checkedDate(operation: string, field: string, value: unknown): string {
  return value instanceof Date && Number.isFinite(value.getTime()) ? value.toISOString() : refuseStateInput(operation, field, "a valid Date", value);
}

/**
 * Refuse a schedule row no claim could read: a claim compares `nextRunAt`
 * as a time and tests `enabled` as a boolean, so a row that is neither would be leased on every
 * claim, or never. Returns `nextRunAt` as a store keeps it: an ISO UTC time (checkedIsoTime).
 */
export function checkScheduleInput(operation: string, schedule: Omit<ScheduleRecord, "lease">, name = "schedule"): string {
  if (typeof schedule !== "object" || schedule === null) refuseStateInput(operation, name, "an object", schedule);
  const { id, intervalMs, nextRunAt, enabled, agentId } = schedule;
  if (typeof id !== "string" || id === "") refuseStateInput(operation, `${name}.id`, "a non-empty string", id);
  // 0 is a schedule that runs once (its dispatch gives the next time, if any); a fraction would read as 0 in one store and 1 ms in another.
  if (typeof intervalMs !== "number" || !Number.isSafeInteger(intervalMs) || intervalMs < 0) refuseStateInput(operation, `${name}.intervalMs`, "a whole number of milliseconds >= 0 (0: it runs once)", intervalMs);
  const time = checkedIsoTime(operation, `${name}.nextRunAt`, nextRunAt);
  if (typeof enabled !== "boolean") refuseStateInput(operation, `${name}.enabled`, "a boolean", enabled);
  if (agentId !== undefined && agentId !== null && (typeof agentId !== "string" || agentId === "")) {
    refuseStateInput(operation, `${name}.agentId`, "a non-empty string or null", agentId);
  }
  return time;
}

/**
 * The arguments of `replaceSchedule`: two rows the claim could read, of one id (a replace never
 * moves a row). Returns `next.nextRunAt` as a store keeps it (checkScheduleInput).
 */
export function checkScheduleReplace(expected: Omit<ScheduleRecord, "lease">, next: Omit<ScheduleRecord, "lease">): string {
  const operation = `replaceSchedule(schedule "${String((expected as Partial<ScheduleRecord> | null)?.id)}")`;
  checkScheduleInput(operation, expected, "expected");
  const nextRunAt = checkScheduleInput(operation, next, "next");
  if (next.id !== expected.id) refuseStateInput(operation, "next.id", `expected.id (${JSON.stringify(expected.id)})`, next.id);
  return nextRunAt;
}

/** The argument of `deleteScheduleIf`: a row the claim could read, as `replaceSchedule` checks its `expected`. */
export function checkScheduleDeleteIf(expected: Omit<ScheduleRecord, "lease">): void {
  checkScheduleInput(`deleteScheduleIf(schedule "${String((expected as Partial<ScheduleRecord> | null)?.id)}")`, expected, "expected");
}

/** The `claimed` of `completeScheduleRun` (when given): a row the claim could read, of the schedule completed. */
export function checkScheduleClaimed(operation: string, id: string, claimed: Omit<ScheduleRecord, "lease"> | undefined): void {
  if (claimed === undefined) return;
  checkScheduleInput(operation, claimed, "claimed");
  if (claimed.id !== id) refuseStateInput(operation, "claimed.id", `the id of the schedule completed (${JSON.stringify(id)})`, claimed.id);
}

/** `value` as milliseconds since the epoch when it is an ISO-8601 time; refused otherwise. */
export function checkedTimeText(operation: string, field: string, value: unknown): number {
  const ms = typeof value === "string" ? Date.parse(value) : Number.NaN;
  return Number.isFinite(ms) ? ms : refuseStateInput(operation, field, "an ISO-8601 time", value);
}

/**
 * `value` as an ISO UTC time (`...T07:00:00.000Z` for `...T12:00:00+05:00`), the form PostgreSQL
 * gives a time back in, when it is an ISO-8601 time; refused otherwise. Text already in that form
 * is returned as it is, not as a new string.
 */
export function checkedIsoTime(operation: string, field: string, value: unknown): string {
  const iso = new Date(checkedTimeText(operation, field, value)).toISOString();
  return iso === value ? value : iso;
}

/** The latest time a Date holds (8.64e15 ms after the epoch). */
const LAST_TIME_MS = 8.64e15;

/**
 * When a lease given `ttlMs` from `fromMs` expires, as ISO text; a ttlMs that is not a number of
 * milliseconds >= 0 (negative, NaN, missing) is refused, as PostgreSQL's interval arithmetic does,
 * instead of making a lease that expired before it was taken or an Invalid Date.
 */
export function leaseExpiresAt(operation: string, field: string, fromMs: number, ttlMs: unknown): string {
  checkLeaseTtl(operation, field, ttlMs);
  if (!(fromMs + ttlMs <= LAST_TIME_MS)) refuseStateInput(operation, field, "a number of milliseconds >= 0", ttlMs);
  return isoTimestamp(fromMs + ttlMs);
}

/** Refuse a lease length that is not a finite number of milliseconds >= 0 (negative, NaN, missing). */
export function checkLeaseTtl(operation: string, field: string, ttlMs: unknown): asserts ttlMs is number {
  if (typeof ttlMs !== "number" || !(ttlMs >= 0 && ttlMs < Number.POSITIVE_INFINITY)) refuseStateInput(operation, field, "a number of milliseconds >= 0", ttlMs);
}

/** Refuse a lease holder that is not a non-empty string: an empty owner is a lease no one can renew or release by name. */
export function checkLeaseOwner(operation: string, field: string, owner: unknown): void {
  checkNonEmptyString(operation, field, owner);
}

/**
 * Refuse a new run a store would keep but never read right: an empty id, agent or revision, an
 * input that is not `{ message, metadata }`, a status no run has, an empty idempotency key (it
 * would dedupe every run without one), a lease for an empty owner or of a length that is none
 * (also when the run exists already and is returned unleased, as PostgreSQL checks it).
 */
export function checkNewRun(operation: string, run: NewRun, options?: CreateRunOptions): void {
  if (!isJsonObject(run)) refuseStateInput(operation, "run", "a JSON object", run);
  checkNonEmptyString(operation, "run.id", run.id);
  checkNonEmptyString(operation, "run.agentId", run.agentId);
  checkNonEmptyString(operation, "run.agentRevision", run.agentRevision);
  checkString(operation, "run.modelSpec", run.modelSpec);
  checkStringOrNull(operation, "run.conversationId", run.conversationId);
  if (run.status !== undefined && !RUN_STATUSES.includes(run.status)) refuseStateInput(operation, "run.status", `one of ${RUN_STATUSES.join(", ")}`, run.status);
  const { input } = run;
  checkPlainJsonObject(operation, "run.input", input);
  checkString(operation, "run.input.message", input.message);
  checkPlainJsonObject(operation, "run.input.metadata", input.metadata);
  if (run.idempotencyKey !== undefined) checkNonEmptyString(operation, "run.idempotencyKey", run.idempotencyKey);
  const lease = options?.lease;
  if (lease !== undefined) {
    if (!isJsonObject(lease)) refuseStateInput(operation, "options.lease", "a JSON object", lease);
    checkLeaseOwner(operation, "options.lease.owner", lease.owner);
    checkLeaseTtl(operation, "options.lease.ttlMs", lease.ttlMs);
  }
}

/**
 * The page size a `listRuns` filter asks for, as whole runs and at least 1 (undefined when it gives
 * none: the store's default), after refusing a limit that is no finite number (one store read NaN
 * as an error, another as the default) and a status no run has (one store refused it, another
 * listed nothing).
 */
export function checkRunListFilter(filter: RunListFilter): number | undefined {
  if (filter.status !== undefined) {
    const statuses = [filter.status].flat();
    for (let index = 0; index < statuses.length; index += 1) {
      if (!RUN_STATUSES.includes(statuses[index]!)) refuseStateInput("listRuns", `filter.status[${index}]`, `one of ${RUN_STATUSES.join(", ")}`, statuses[index]);
    }
  }
  const { limit } = filter;
  if (limit === undefined) return undefined;
  if (typeof limit !== "number" || !Number.isFinite(limit)) refuseStateInput("listRuns", "filter.limit", "a number of runs per page (left out: the store's default)", limit);
  return Math.max(1, Math.floor(limit));
}

/**
 * Refuse a usage record a store would keep but not count: an empty id, a count or cost that is no
 * finite number (NaN was kept by one store and read back as null), a `createdAt` that is no time.
 * Returns the record as a store keeps it: `createdAt` as an ISO UTC time (checkedIsoTime), which
 * `listUsage`'s `since` compares; the record itself when it already is.
 */
export function checkedUsageRecord(operation: string, record: UsageRecord): UsageRecord {
  if (!isJsonObject(record)) refuseStateInput(operation, "record", "a JSON object", record);
  checkNonEmptyString(operation, "record.id", record.id);
  checkString(operation, "record.runId", record.runId);
  checkStringOrNull(operation, "record.conversationId", record.conversationId);
  checkString(operation, "record.provider", record.provider);
  checkString(operation, "record.model", record.model);
  checkFiniteNumber(operation, "record.inputTokens", record.inputTokens);
  checkFiniteNumber(operation, "record.outputTokens", record.outputTokens);
  checkFiniteNumber(operation, "record.cacheReadTokens", record.cacheReadTokens);
  checkFiniteNumber(operation, "record.cacheWriteTokens", record.cacheWriteTokens);
  checkFiniteNumber(operation, "record.costUsd", record.costUsd);
  const createdAt = checkedIsoTime(operation, "record.createdAt", record.createdAt);
  if (record.agentId !== undefined && record.agentId !== null) checkNonEmptyString(operation, "record.agentId", record.agentId);
  return createdAt === record.createdAt ? record : { ...record, createdAt };
}

/** Refuse a file record with an empty path or a size that is not a whole number of bytes >= 0 (a fraction was kept by one store and rounded by another). */
export function checkFileRecord(operation: string, record: FileRecord): void {
  if (!isJsonObject(record)) refuseStateInput(operation, "record", "a JSON object", record);
  checkNonEmptyString(operation, "record.path", record.path);
  checkString(operation, "record.blobKey", record.blobKey);
  if (!Number.isSafeInteger(record.size) || record.size < 0) refuseStateInput(operation, "record.size", "a whole number of bytes >= 0", record.size);
  checkString(operation, "record.contentType", record.contentType);
  checkString(operation, "record.sha256", record.sha256);
  checkStringOrNull(operation, "record.runId", record.runId);
  checkString(operation, "record.createdAt", record.createdAt);
}

/** The roles a conversation message may have: a model context reads no other. */
export const CONVERSATION_ROLES: readonly ConversationMessage["role"][] = ["user", "assistant"];

/** Refuse an append to a conversation with an empty id or agent, or a message whose role is neither user nor assistant or whose text is not text. */
export function checkConversationAppend(operation: string, conversationId: string, messages: readonly ConversationMessage[], options: ConversationScope): void {
  checkNonEmptyString(operation, "conversationId", conversationId);
  if (!Array.isArray(messages)) refuseStateInput(operation, "messages", "an array", messages);
  if (options.agentId !== undefined) checkNonEmptyString(operation, "options.agentId", options.agentId);
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index];
    if (!isJsonObject(message)) refuseStateInput(operation, `messages[${index}]`, "a JSON object", message);
    if (!(CONVERSATION_ROLES as readonly unknown[]).includes(message.role)) refuseStateInput(operation, `messages[${index}].role`, `one of ${CONVERSATION_ROLES.join(", ")}`, message.role);
    checkString(operation, `messages[${index}].content`, message.content);
    checkStringOrNull(operation, `messages[${index}].runId`, message.runId);
    if (message.createdAt !== undefined) checkString(operation, `messages[${index}].createdAt`, message.createdAt);
  }
}

/** Refuse a setting with an empty key, an undefined value (JSON would drop it) or an audit without an actor. */
export function checkSettingWrite(operation: string, key: string, value: unknown, audit: { actor: string; reason?: string }): void {
  checkNonEmptyString(operation, "key", key);
  if (!isJsonObject(audit)) refuseStateInput(operation, "audit", "a JSON object", audit);
  checkString(operation, "audit.actor", audit.actor);
  checkStringOrNull(operation, "audit.reason", audit.reason);
  definedStateValue(operation, "value", value);
}

const isJsonObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Whether `value` is an object that JSON keeps as an object: a plain object (`{...}`, from
 * JSON.parse or with a null prototype) without a toJSON method. A Date, a class instance, a Map
 * or an object with toJSON is not: JSON.stringify writes a Date (and whatever toJSON returns) as
 * a string or another value, and a class instance loses its class, so the value read back is not
 * the one written, or not an object at all.
 */
export function isPlainJsonObject(value: unknown): value is Record<string, unknown> {
  if (!isJsonObject(value) || Object.prototype.toString.call(value) !== "[object Object]") return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  // Object.prototype of this realm or another (a vm context's), or none.
  if (prototype !== null && Object.getPrototypeOf(prototype) !== null) return false;
  return typeof (value as { toJSON?: unknown }).toJSON !== "function";
}

/**
 * Refuse a value stored as a JSON object that a store would read back as something else (a
 * run's input and metadata, an event's data, a step's metadata): a reader of the row would find a
 * string where an object was written, and refuse the row, so the run could no longer be listed
 * or recovered.
 */
export function checkPlainJsonObject(operation: string, field: string, value: unknown): asserts value is Record<string, unknown> {
  if (!isPlainJsonObject(value)) refuseStateInput(operation, field, "a plain JSON object (not a Date, a class instance or an object with toJSON)", value);
}

function checkNonEmptyString(operation: string, field: string, value: unknown): void {
  if (typeof value !== "string" || value === "") refuseStateInput(operation, field, "a non-empty string", value);
}

function checkString(operation: string, field: string, value: unknown): void {
  if (typeof value !== "string") refuseStateInput(operation, field, "a string", value);
}

/** Left out reads as null, as PostgreSQL stores it. */
function checkStringOrNull(operation: string, field: string, value: unknown): void {
  if (value !== undefined && value !== null && typeof value !== "string") refuseStateInput(operation, field, "a string or null", value);
}

function checkFiniteNumber(operation: string, field: string, value: unknown): void {
  if (typeof value !== "number" || !Number.isFinite(value)) refuseStateInput(operation, field, "a finite number", value);
}

/** Refuse an event with no type or with data that is not a plain JSON object: every reader of the log takes both as given. */
export function checkNewEvents(operation: string, events: readonly NewRunEvent[]): void {
  if (!Array.isArray(events)) refuseStateInput(operation, "events", "an array of events", events);
  for (let index = 0; index < events.length; index += 1) {
    const event = events[index] as NewRunEvent | undefined;
    if (typeof event?.type !== "string" || event.type === "") refuseStateInput(operation, `events[${index}].type`, "a non-empty string", event?.type);
    if (event.data !== undefined) checkPlainJsonObject(operation, `events[${index}].data`, event.data);
  }
}

/**
 * The largest memory file a store keeps, in UTF-8 bytes. Memory is the agent's notes, read into
 * model calls and copied with every state snapshot; bulk data belongs in a blob or a file.
 */
export const MAX_MEMORY_FILE_BYTES = 1024 * 1024;

/**
 * Refuse a memory write no store could keep as the same file: a path that is not a non-empty
 * string (the empty path is the /memory folder itself, which no read or delete reaches), content
 * that is not a string (a store would keep it as some serialization of its own, or fail inside),
 * content over MAX_MEMORY_FILE_BYTES (AL_ERR_MEMORY_TOO_LARGE). `caller` names the call in the
 * message (`ctx.memory.write(/memory/notes.md)`); by default the store's `writeMemory(path ...)`.
 */
export function checkMemoryWrite(path: unknown, content: unknown, caller?: string): void {
  const operation = caller ?? `writeMemory(path ${describeStateValue(path)})`;
  if (typeof path !== "string" || path === "") refuseStateInput(caller ?? "writeMemory", "path", "a non-empty string naming a file under /memory (e.g. notes/todo.md)", path);
  if (typeof content !== "string") {
    throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `${operation}: content must be a string, got ${describeStateValue(content)}`, {
      fix: "Pass text; serialize other values first, e.g. content: JSON.stringify(value).",
      details: { operation, field: "content" },
    });
  }
  // A UTF-16 unit is at most 3 UTF-8 bytes: short content needs no count.
  if (content.length * 3 <= MAX_MEMORY_FILE_BYTES) return;
  const size = Buffer.byteLength(content, "utf8");
  if (size <= MAX_MEMORY_FILE_BYTES) return;
  throw new AssemblyLineError("AL_ERR_MEMORY_TOO_LARGE", `${operation}: content is ${size} bytes of UTF-8, more than the ${MAX_MEMORY_FILE_BYTES} a memory file holds`, {
    fix: "Keep memory to notes and summaries; put bulk data in a blob (ctx.blob) or a /workspace file and note where it is.",
    details: { path, size, limit: MAX_MEMORY_FILE_BYTES },
  });
}
