import type { OpenEveRuntime, RunResult } from "@assemblyline-agents/runtime";
import type { RunEvent, RunStatus } from "@assemblyline-agents/core";

/** Statuses a run stays in until someone acts: what an HTTP caller may wait for. */
export const RESTING_STATUSES: ReadonlySet<RunStatus> = new Set(["completed", "failed", "waiting_approval", "waiting_input"]);
const RESTING_EVENTS = new Set(["run.completed", "run.failed", "run.waiting_approval", "run.waiting_input"]);

/**
 * Lets a request wait (bounded) for a run to reach a resting status, driven by
 * the committed event stream rather than polling.
 */
export class RunWatcher {
  private readonly waiters = new Map<string, Set<(event?: RunEvent) => void>>();

  constructor(private readonly runtime: OpenEveRuntime) {
    runtime.hooks.event.tap("node-host:run-watcher", (event) => {
      if (!RESTING_EVENTS.has(event.type)) return;
      const waiting = this.waiters.get(event.runId);
      if (waiting) for (const wake of waiting) wake(event);
    });
  }

  /** The run's result once it rests, or its current result after `timeoutMs` (or `release()`). */
  async waitForRest(runId: string, timeoutMs: number): Promise<RunResult> {
    if (timeoutMs <= 0) return this.runtime.getRun(runId);
    const watch = this.watch(runId);
    // Registered before this read, so a rest recorded in between still wakes us.
    const current = await this.runtime.getRun(runId).catch((error: unknown) => {
      watch.cancel();
      throw error;
    });
    if (RESTING_STATUSES.has(current.status)) {
      watch.cancel();
      return current;
    }
    return watch.rested(timeoutMs);
  }

  /**
   * Start watching `runId` now, before it can rest: for a run this process
   * has just created and not yet started, whose rest can only come after this
   * call, so no read of its current state is needed first. `rested` resolves
   * with its result once it rests, or its current result after `timeoutMs`;
   * call `cancel` instead when not waiting after all.
   */
  watch(runId: string): { rested(timeoutMs: number): Promise<RunResult>; cancel(): void } {
    let wake!: (event?: RunEvent) => void;
    const woken = new Promise<RunEvent | undefined>((resolve) => (wake = resolve));
    const set = this.waiters.get(runId) ?? new Set();
    set.add(wake);
    this.waiters.set(runId, set);
    let timer: NodeJS.Timeout | undefined;
    const cancel = () => {
      clearTimeout(timer);
      set.delete(wake);
      if (set.size === 0 && this.waiters.get(runId) === set) this.waiters.delete(runId);
    };
    return {
      cancel,
      rested: async (timeoutMs) => {
        timer = setTimeout(wake, timeoutMs);
        let event: RunEvent | undefined;
        try {
          event = await woken;
        } finally {
          cancel();
        }
        // run.completed carries the reply the run record holds: no read back of what was just committed.
        if (event?.type === "run.completed" && event.runId === runId) return { runId, status: "completed", response: { text: String(event.data.text ?? "") } };
        return this.runtime.getRun(runId);
      },
    };
  }

  /** Answer every waiting request now (shutdown): they report the run as it stands. */
  release(): void {
    for (const set of this.waiters.values()) for (const wake of set) wake();
  }
}
