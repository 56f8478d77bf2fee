/**
 * The answers OTLP/HTTP says to retry: "All other 4xx or 5xx response status
 * codes MUST NOT be retried" (a 500 from a collector is final, not transient).
 */
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

/** A retryable answer, or a network error (no status), is worth another try; other answers are final. */
export function shouldRetry(status: number | undefined): boolean {
  return status === undefined || RETRYABLE_STATUSES.has(status);
}

/**
 * fetch's refusal of the request itself (a header or URL it cannot send): no
 * try can succeed. undici reports a network failure as "fetch failed" with the
 * socket's error as its cause; what it refuses up front has no cause.
 */
export function isRequestRefusal(error: unknown): boolean {
  return error instanceof TypeError && error.cause === undefined;
}

/**
 * How long to wait before the next attempt: the server's Retry-After (seconds
 * or an HTTP date) when it sent one, else exponential backoff with full jitter;
 * both capped by maxBackoffMs.
 */
export function retryDelayMs(attempt: number, retryAfter: string | null, options: { initialBackoffMs: number; maxBackoffMs: number }): number {
  const asked = parseRetryAfter(retryAfter);
  if (asked !== undefined) return Math.min(asked, options.maxBackoffMs);
  const ceiling = Math.min(options.maxBackoffMs, options.initialBackoffMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
