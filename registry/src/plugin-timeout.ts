import { DEFAULT_PLUGIN_TIMEOUT_MS, MAX_TIMER_MS, isTimerDelay } from "@assemblyline-agents/core";

/**
 * The bound on each plugin call (apply, adapter factory, close), checked
 * before anything is loaded: 0, a negative number, NaN, Infinity or more than
 * a timer holds would make every wait end at once ("did not settle within
 * Infinity ms"). `owner` names the call it was passed to, for the message.
 */
export function pluginTimeoutMs(timeoutMs: unknown, owner: string): number {
  if (timeoutMs === undefined) return DEFAULT_PLUGIN_TIMEOUT_MS;
  if (!isTimerDelay(timeoutMs)) {
    throw new TypeError(
      `${owner}: timeoutMs is ${typeof timeoutMs === "number" ? String(timeoutMs) : JSON.stringify(timeoutMs) ?? String(timeoutMs)}; give a number of milliseconds above 0 and at most ${MAX_TIMER_MS} (about 24.8 days), or leave it out for the default ${DEFAULT_PLUGIN_TIMEOUT_MS}`,
    );
  }
  return timeoutMs;
}
