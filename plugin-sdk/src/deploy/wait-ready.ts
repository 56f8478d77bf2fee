import { setTimeout as sleep } from "node:timers/promises";

export interface ReadyCheck {
  /** e.g. http://127.0.0.1:8080/readyz */
  url: string;
  timeoutMs: number;
  /** Poll interval. Default 250 ms. */
  intervalMs?: number;
  /** Checked between polls: false (e.g. the release's process exited) stops waiting early. */
  alive?(): Promise<boolean>;
  /** Extra request headers (e.g. a bearer token). */
  headers?: Record<string, string>;
}

/** Poll until `url` answers 2xx; false when the deadline passes or `alive` says the release died. */
export async function waitForReady(check: ReadyCheck): Promise<boolean> {
  const deadline = Date.now() + check.timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(check.url, { headers: check.headers ?? {}, signal: AbortSignal.timeout(Math.min(5_000, Math.max(1, deadline - Date.now()))) });
      await response.arrayBuffer().catch(() => undefined);
      if (response.ok) return true;
    } catch {
      // Not listening yet.
    }
    if (check.alive && !(await check.alive())) return false;
    await sleep(check.intervalMs ?? 250);
  }
  return false;
}
