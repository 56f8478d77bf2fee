import { AssemblyLineError } from "../errors.js";
import type { ScheduleRecord } from "./facets.js";

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
export function checkScheduleInput(operation: string, schedule: Omit<ScheduleRecord, "lease">): void {
  if (typeof schedule !== "object" || schedule === null) refuseStateInput(operation, "schedule", "an object", schedule);
  const { id, intervalMs, nextRunAt, enabled, agentId } = schedule;
  if (typeof id !== "string" || id === "") refuseStateInput(operation, "schedule.id", "a non-empty string", id);
  // 0 is a schedule that runs once (its dispatch gives the next time, if any); a fraction would read as 0 in one store and 1 ms in another.
  if (typeof intervalMs !== "number" || !Number.isSafeInteger(intervalMs) || intervalMs < 0) refuseStateInput(operation, "schedule.intervalMs", "a whole number of milliseconds >= 0 (0: it runs once)", intervalMs);
  if (typeof nextRunAt !== "string" || !Number.isFinite(Date.parse(nextRunAt))) refuseStateInput(operation, "schedule.nextRunAt", "an ISO-8601 time", nextRunAt);
  if (typeof enabled !== "boolean") refuseStateInput(operation, "schedule.enabled", "a boolean", enabled);
  if (agentId !== undefined && agentId !== null && (typeof agentId !== "string" || agentId === "")) {
    refuseStateInput(operation, "schedule.agentId", "a non-empty string or null", agentId);
  }
}
