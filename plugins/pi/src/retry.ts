import { setTimeout as sleep } from "node:timers/promises";
import type { PiRetryOptions } from "./options.js";

export const DEFAULT_RETRY: Required<PiRetryOptions> = { maxRetries: 3, initialDelayMs: 500, maxDelayMs: 30_000 };

/** A failed attempt: whether another may succeed, and how long the server asked us to wait. */
export interface AttemptFailure {
  retryable: boolean;
  retryAfterMs?: number;
}

export interface RetryHooks<E> {
  classify(error: unknown): (AttemptFailure & { error: E }) | undefined;
  onRetry?(info: { attempt: number; delayMs: number; error: E }): void;
}

/**
 * Run `attempt` until it succeeds, `classify` says the error is final (or not
 * one of ours), or the retries are spent. Waits honour the server's
 * `retry-after`, else back off exponentially with jitter; every wait is capped
 * and ends early when `signal` aborts.
 */
export async function retryTransientFailures<T, E>(
  attempt: (attemptNumber: number) => Promise<T>,
  hooks: RetryHooks<E>,
  options: PiRetryOptions,
  signal: AbortSignal,
): Promise<T> {
  const policy = { ...DEFAULT_RETRY, ...definedOptions(options) };
  for (let attemptNumber = 1; ; attemptNumber += 1) {
    try {
      return await attempt(attemptNumber);
    } catch (error) {
      const failure = hooks.classify(error);
      if (!failure?.retryable || attemptNumber > policy.maxRetries || signal.aborted) throw error;
      const delayMs = Math.min(failure.retryAfterMs ?? backoffDelay(attemptNumber, policy.initialDelayMs), policy.maxDelayMs);
      hooks.onRetry?.({ attempt: attemptNumber, delayMs, error: failure.error });
      await sleep(delayMs, undefined, { signal });
    }
  }
}

/** Exponential backoff with "equal jitter": half fixed, half random, so retries of many runs spread out. */
export function backoffDelay(attemptNumber: number, initialDelayMs: number): number {
  const ceiling = initialDelayMs * 2 ** (attemptNumber - 1);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/**
 * `retry-after` (seconds or an HTTP date, RFC 9110 §10.2.3) or the non-standard
 * `retry-after-ms` OpenAI and Anthropic send, as milliseconds from `now`.
 */
export function parseRetryAfter(headers: Record<string, string>, now: number = Date.now()): number | undefined {
  const millis = headers["retry-after-ms"];
  if (millis !== undefined && /^\d+(\.\d+)?$/.test(millis.trim())) return Number(millis.trim());
  const value = headers["retry-after"]?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function definedOptions(options: PiRetryOptions): PiRetryOptions {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}
