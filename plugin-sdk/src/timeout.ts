import { AssemblyLineError } from "./errors.js";

/** How long a plugin's apply, adapter factory or close may take by default. */
export const DEFAULT_PLUGIN_TIMEOUT_MS = 10_000;

/** Settle `work` within `ms`, or fail naming `what` (a plugin that never settles must not hang a boot). */
export async function withinTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new AssemblyLineError("AL_ERR_PLUGIN_TIMEOUT", `${what} did not settle within ${ms} ms`, { fix: "Make it resolve or reject; check for a connection that never opens." })),
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
