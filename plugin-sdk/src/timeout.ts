import { AssemblyLineError } from "./errors.js";

/** How long a plugin's apply, adapter factory or close may take by default. */
export const DEFAULT_PLUGIN_TIMEOUT_MS = 10_000;

/**
 * Settle `work` within `ms`, or fail naming `what` (a plugin that never settles must not hang a boot).
 * `late` makes the error to fail with instead of AL_ERR_PLUGIN_TIMEOUT, for a caller whose users
 * know the wait by another name. `work` runs on when the time is up: only the wait ends.
 */
export async function withinTimeout<T>(work: PromiseLike<T>, ms: number, what: string, late?: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(late ? late() : new AssemblyLineError("AL_ERR_PLUGIN_TIMEOUT", `${what} did not settle within ${ms} ms`, { fix: "Make it resolve or reject; check for a connection that never opens." })),
      ms,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The longest delay Node's timers keep: 2^31 - 1 ms (about 24.8 days). A longer one, Infinity included, fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/** Whether `value` is a delay a timer waits for: a number above 0 and at most MAX_TIMER_MS. */
export function isTimerDelay(value: unknown): value is number {
  return typeof value === "number" && value > 0 && value <= MAX_TIMER_MS;
}
