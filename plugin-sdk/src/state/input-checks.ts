import { AssemblyLineError } from "../errors.js";
import type { NewRunEvent } from "../events.js";
import type { ScheduleRecord } from "./facets.js";
import { isoTimestamp } from "./iso-time.js";
import { RUN_STATUSES, type NewRun } from "./runs.js";

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
  if (seq !== undefined && seq > lastSeq) refuseStateInput(operation, field, `at most the run's lastSeq (${lastSeq})`, seq);
}

/** `value` as an ISO time when it is a Date that holds one; else refused. */
export function checkedDate(operation: string, field: string, value: unknown): string {
  return value instanceof Date && Number.isFinite(value.getTime()) ? value.toISOString() : refuseStateInput(operation, field, "a valid Date", value);
}

/**
 * Refuse a schedule row no claim could read: a claim compares `nextRunAt`
 * as a time and tests `enabled` as a boolean, so a row that is neither would be leased on every
 * claim, or never.
 */
export function checkScheduleInput(operation: string, schedule: Omit<ScheduleRecord, "lease">, name = "schedule"): void {
  if (typeof schedule !== "object" || schedule === null) refuseStateInput(operation, name, "an object", schedule);
  const { id, intervalMs, nextRunAt, enabled, agentId } = schedule;
  if (typeof id !== "string" || id === "") refuseStateInput(operation, `${name}.id`, "a non-empty string", id);
  // 0 is a schedule that runs once (its dispatch gives the next time, if any); a fraction would read as 0 in one store and 1 ms in another.
  if (typeof intervalMs !== "number" || !Number.isSafeInteger(intervalMs) || intervalMs < 0) refuseStateInput(operation, `${name}.intervalMs`, "a whole number of milliseconds >= 0 (0: it runs once)", intervalMs);
  checkedTimeText(operation, `${name}.nextRunAt`, nextRunAt);
  if (typeof enabled !== "boolean") refuseStateInput(operation, `${name}.enabled`, "a boolean", enabled);
  if (agentId !== undefined && agentId !== null && (typeof agentId !== "string" || agentId === "")) {
    refuseStateInput(operation, `${name}.agentId`, "a non-empty string or null", agentId);
  }
}

/** The arguments of `replaceSchedule`: two rows the claim could read, of one id (a replace never moves a row). */
export function checkScheduleReplace(expected: Omit<ScheduleRecord, "lease">, next: Omit<ScheduleRecord, "lease">): void {
  const operation = `replaceSchedule(schedule "${String((expected as Partial<ScheduleRecord> | null)?.id)}")`;
  checkScheduleInput(operation, expected, "expected");
  checkScheduleInput(operation, next, "next");
  if (next.id !== expected.id) refuseStateInput(operation, "next.id", `expected.id (${JSON.stringify(expected.id)})`, next.id);
}

/** The argument of `deleteScheduleIf`: a row the claim could read, as `replaceSchedule` checks its `expected`. */
export function checkScheduleDeleteIf(expected: Omit<ScheduleRecord, "lease">): void {
  checkScheduleInput(`deleteScheduleIf(schedule "${String((expected as Partial<ScheduleRecord> | null)?.id)}")`, expected, "expected");
}

/** `value` as milliseconds since the epoch when it is an ISO-8601 time; refused otherwise. */
export function checkedTimeText(operation: string, field: string, value: unknown): number {
  const ms = typeof value === "string" ? Date.parse(value) : Number.NaN;
  return Number.isFinite(ms) ? ms : refuseStateInput(operation, field, "an ISO-8601 time", value);
}

/** The latest time a Date holds (8.64e15 ms after the epoch). */
const LAST_TIME_MS = 8.64e15;

/**
 * When a lease given `ttlMs` from `fromMs` expires, as ISO text; a ttlMs that is not a number of
 * milliseconds >= 0 (negative, NaN, missing) is refused, as PostgreSQL's interval arithmetic does,
 * instead of making a lease that expired before it was taken or an Invalid Date.
 */
export function leaseExpiresAt(operation: string, field: string, fromMs: number, ttlMs: unknown): string {
  if (typeof ttlMs !== "number" || !(ttlMs >= 0) || !(fromMs + ttlMs <= LAST_TIME_MS)) refuseStateInput(operation, field, "a number of milliseconds >= 0", ttlMs);
  return isoTimestamp(fromMs + ttlMs);
}

/** Refuse a new run a store would keep but never read right: a status no run has, an empty idempotency key (it would dedupe every run without one). */
export function checkNewRun(operation: string, run: NewRun): void {
  if (run.status !== undefined && !RUN_STATUSES.includes(run.status)) refuseStateInput(operation, "run.status", `one of ${RUN_STATUSES.join(", ")}`, run.status);
  if (run.idempotencyKey !== undefined && (typeof run.idempotencyKey !== "string" || run.idempotencyKey === "")) {
    refuseStateInput(operation, "run.idempotencyKey", "a non-empty string", run.idempotencyKey);
  }
}

/** Refuse an event with no type or with data that is not a JSON object: every reader of the log takes both as given. */
export function checkNewEvents(operation: string, events: readonly NewRunEvent[]): void {
  if (!Array.isArray(events)) refuseStateInput(operation, "events", "an array of events", events);
  for (let index = 0; index < events.length; index += 1) {
    const event = events[index] as NewRunEvent | undefined;
    if (typeof event?.type !== "string" || event.type === "") refuseStateInput(operation, `events[${index}].type`, "a non-empty string", event?.type);
    const data = event.data;
    if (data !== undefined && (typeof data !== "object" || data === null || Array.isArray(data))) refuseStateInput(operation, `events[${index}].data`, "a JSON object", data);
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
