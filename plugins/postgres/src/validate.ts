import { checkLeaseOwner, checkLeaseTtl, describeStateValue, leaseExpiresAt } from "@assemblyline-agents/core";
import { inputInvalid } from "./errors.js";
import { isJsonObject } from "./rows.js";

/**
 * Argument checks for values headed into the database: a wrong type is refused
 * here with the field's name, before any statement runs, instead of surfacing
 * as a NOT NULL violation or a stored record that later fails to decode. The
 * checks of whole records every store makes (a new run, a usage or file record,
 * a schedule row...) are the shared ones in @assemblyline-agents/core, so each
 * store refuses the same input with the same message.
 */
export class ArgumentCheck {
  constructor(readonly operation: string) {}

  fail(field: string, expected: string, value: unknown): never {
    throw inputInvalid(this.operation, `${field} must be ${expected}, got ${describeStateValue(value)}`, { field });
  }

  string(field: string, value: unknown): string {
    return typeof value === "string" && value !== "" ? value : this.fail(field, "a non-empty string", value);
  }

  text(field: string, value: unknown): string {
    return typeof value === "string" ? value : this.fail(field, "a string", value);
  }

  nullableString(field: string, value: unknown): string | null {
    if (value === undefined || value === null) return null;
    return typeof value === "string" ? value : this.fail(field, "a string or null", value);
  }

  oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
    return typeof value === "string" && (allowed as readonly string[]).includes(value)
      ? (value as T)
      : this.fail(field, `one of ${allowed.join(", ")}`, value);
  }

  object(field: string, value: unknown): Record<string, unknown> {
    return isJsonObject(value) ? value : this.fail(field, "a JSON object", value);
  }

  number(field: string, value: unknown): number {
    return typeof value === "number" && Number.isFinite(value) ? value : this.fail(field, "a finite number", value);
  }

  nonNegative(field: string, value: unknown): number {
    const n = this.number(field, value);
    return n >= 0 ? n : this.fail(field, "a number >= 0", value);
  }

  /** An ISO-8601 (or otherwise Date-parseable) time, as an ISO string. */
  time(field: string, value: unknown): string {
    const ms = value instanceof Date ? value.getTime() : typeof value === "string" ? Date.parse(value) : Number.NaN;
    return Number.isFinite(ms) ? new Date(ms).toISOString() : this.fail(field, "an ISO-8601 time", value);
  }

  optionalDate(field: string, value: unknown): Date | undefined {
    if (value === undefined) return undefined;
    return value instanceof Date && Number.isFinite(value.getTime()) ? value : this.fail(field, "a valid Date", value);
  }
}


/**
 * A fence's token as the statement compares it: a lease's token is a whole number >= 0, so a
 * token that is none (1.5) is a stale fence. -1 matches no lease, and the statement answers as
 * for any other stale fence, instead of failing the cast to bigint.
 */
export function fenceTokenParam(token: number): number {
  return Number.isSafeInteger(token) ? token : -1;
}

/**
 * Refuse a lease no time can end: one that expires past the last time a Date holds, as the
 * in-memory state refuses it (leaseExpiresAt), instead of sending it to fail in the database
 * (or to come back as a time no Date reads). Measured from `now`, else this host's clock.
 */
export function checkLeaseEnd(operation: string, field: string, ttlMs: number, now: Date | undefined): void {
  leaseExpiresAt(operation, field, (now ?? new Date()).getTime(), ttlMs);
}

/** A caller-supplied page or claim size: absent -> fallback, otherwise a whole number >= min. */
export function sizeParam(value: number | undefined, fallback: number, min: number): number {
  if (value === undefined || !Number.isFinite(value)) return fallback;
  return Math.max(min, Math.floor(value));
}

/** Claims lease at most this many rows when the caller gives no limit. */
export const DEFAULT_CLAIM_LIMIT = 100;

/** The arguments every lease claim (runs, deliveries, schedules) takes, checked once. */
export function claimParams(
  operation: string,
  options: { owner: string; ttlMs: number; now?: Date; limit?: number; agentId?: string },
): { owner: string; ttlMs: number; now: ReturnType<ArgumentCheck["optionalDate"]>; limit: number; agentId: string | undefined } {
  const check = new ArgumentCheck(operation);
  check.object("options", options);
  checkLeaseOwner(operation, "options.owner", options.owner);
  checkLeaseTtl(operation, "options.ttlMs", options.ttlMs);
  const now = check.optionalDate("options.now", options.now);
  checkLeaseEnd(operation, "options.ttlMs", options.ttlMs, now);
  return {
    owner: options.owner,
    ttlMs: options.ttlMs,
    now,
    limit: sizeParam(options.limit, DEFAULT_CLAIM_LIMIT, 0),
    agentId: options.agentId === undefined ? undefined : check.string("options.agentId", options.agentId),
  };
}
