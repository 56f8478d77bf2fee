import pRetry from "p-retry";
import { setTimeout as sleep } from "node:timers/promises";

/** Tries of one call at most: the first and two more. */
export const MAX_TRIES = 3;
/** Longest Retry-After waited for: a longer one fails the call at once (waiting less than Daytona asks only earns another 429). */
export const MAX_WAIT_MS = 30_000;
/** The wait when a 429 carries no usable Retry-After, doubled on each try. */
const FALLBACK_WAIT_MS = 1_000;

/*
 * Daytona's rate limiter answers 429 before the request is handled, so the
 * call did nothing and repeating it is safe, as long as the call is one
 * request or repeats harmlessly (a lookup, a command, a file transfer, a
 * named create whose repeat is refused as a conflict). The caller decides:
 * calls made of requests an earlier one of which may have gone through
 * (starting a sandbox, taking a snapshot) are not retried.
 */

/** `operation`, tried again after the time a 429's Retry-After says, at most MAX_TRIES times and never past `withinMs` from now. */
export function retryRateLimited<T>(operation: () => Promise<T>, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  return pRetry(operation, {
    retries: MAX_TRIES - 1,
    // p-retry's own backoff is off: the wait is the one Daytona asks for, taken in shouldRetry.
    minTimeout: 0,
    maxTimeout: 0,
    randomize: false,
    async shouldRetry({ error, attemptNumber }) {
      if ((error as { statusCode?: unknown } | null)?.statusCode !== 429) return false;
      const wait = retryAfterMs(error) ?? FALLBACK_WAIT_MS * 2 ** (attemptNumber - 1);
      if (wait > MAX_WAIT_MS || Date.now() + wait > deadline) return false;
      await sleep(wait);
      return true;
    },
  });
}

/** The Retry-After of an SDK error's response headers (seconds, or an HTTP date) in ms; undefined when absent or unreadable. */
export function retryAfterMs(error: unknown): number | undefined {
  const headers = (error as { headers?: unknown } | null)?.headers as { get?: (name: string) => unknown; [name: string]: unknown } | undefined;
  if (!headers) return undefined;
  const raw = typeof headers.get === "function" ? headers.get("retry-after") : (headers["retry-after"] ?? headers["Retry-After"]);
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (typeof value !== "string" && typeof value !== "number") return undefined;
  const text = String(value).trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
