import type { OpenEveRuntime, RunResult } from "@assemblyline-agents/runtime";
import type { RunStatus } from "@assemblyline-agents/core";

/** Statuses a run stays in until someone acts: what an HTTP caller may wait for. */
export const RESTING_STATUSES: ReadonlySet<RunStatus> = new Set(["completed", "failed", "waiting_approval", "waiting_input"]);
const RESTING_EVENTS = new Set(["run.completed", "run.failed", "run.waiting_approval", "run.waiting_input"]);

/**
 * Lets a request wait (bounded) for a run to reach a resting status, driven by
 * the committed event stream rather than polling.
 */
export class RunWatcher {
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(private readonly runtime: OpenEveRuntime) {
    runtime.hooks.event.tap("node-host:run-watcher", (event) => {
      if (!RESTING_EVENTS.has(event.type)) return;
      const waiting = this.waiters.get(event.runId);
      if (waiting) for (const wake of waiting) wake();
    });
  }

  /** The run's result once it rests, or its current result after `timeoutMs` (or `release()`). */
  async waitForRest(runId: string, timeoutMs: number): Promise<RunResult> {
    if (timeoutMs <= 0) return this.runtime.getRun(runId);
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const set = this.waiters.get(runId) ?? new Set();
    set.add(wake);
    this.waiters.set(runId, set);
    const timer = setTimeout(wake, timeoutMs);
    try {
      // Registered before this read, so a rest recorded in between still wakes us.
      const current = await this.runtime.getRun(runId);
      if (RESTING_STATUSES.has(current.status)) return current;
      await woken;
    } finally {
      clearTimeout(timer);
      set.delete(wake);
      if (set.size === 0 && this.waiters.get(runId) === set) this.waiters.delete(runId);
    }
    return this.runtime.getRun(runId);
  }

  /** Answer every waiting request now (shutdown): they report the run as it stands. */
  release(): void {
    for (const set of this.waiters.values()) for (const wake of set) wake();
  }
}
