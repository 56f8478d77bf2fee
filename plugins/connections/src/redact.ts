import type { ConnectionAuth, JsonValue } from "@assemblyline-agents/core";
import type { GrantStore } from "./grants.js";

/**
 * A connection's secret, as the words that replace it wherever a service
 * echoed it back (a debug endpoint returning the request's headers, an error
 * page quoting them, a tool description): tool results and errors reach the
 * model, events, logs and the settings store, where a secret must never be.
 */
export interface Redaction {
  secret: string;
  mark: string;
}

/** The redaction for `auth`, or undefined without auth or when the grant cannot be read (then nothing was sent either). */
export async function redactionFor(auth: ConnectionAuth | undefined, grants: GrantStore | undefined): Promise<Redaction | undefined> {
  if (!auth || !grants) return undefined;
  const secret = await grants.get(auth.grant).catch(() => undefined);
  return secret ? { secret, mark: `[grant ${auth.grant}]` } : undefined;
}

export function redactValue<T>(value: T, redaction: Redaction | undefined): T {
  if (!redaction) return value;
  const walk = (item: unknown): unknown => {
    if (typeof item === "string") return item.replaceAll(redaction.secret, redaction.mark);
    if (Array.isArray(item)) return item.map(walk);
    if (typeof item === "object" && item !== null) return Object.fromEntries(Object.entries(item).map(([key, inner]) => [walk(key) as string, walk(inner)]));
    return item;
  };
  return walk(value) as T;
}

/** Redact an error's message and stack, and those of its causes, in place; returns it. */
export function redactError(error: unknown, redaction: Redaction | undefined): unknown {
  if (!redaction) return error;
  let current: unknown = error;
  for (let depth = 0; depth < 6 && typeof current === "object" && current !== null; depth += 1) {
    const inner = current as { message?: unknown; stack?: unknown; cause?: unknown };
    for (const field of ["message", "stack"] as const) {
      if (typeof inner[field] === "string" && (inner[field] as string).includes(redaction.secret)) {
        Object.defineProperty(current, field, { value: (inner[field] as string).replaceAll(redaction.secret, redaction.mark), writable: true, configurable: true });
      }
    }
    current = inner.cause;
  }
  return error;
}

export type { JsonValue };
