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
  /** Requests waiting on a drive of this process (`untilDriven`): woken only by release(). */
  private readonly drivenWaits = new Set<() => void>();
  /**
   * Set by release() (shutdown): from then on every wait answers at once, as a timeout of 0 would.
   * A request accepted while its run was still being stored starts its wait after the release,
   * and must not hold its connection until the drain's deadline drops it unanswered.
   */
  private released = false;

  constructor(private readonly runtime: OpenEveRuntime) {
    runtime.hooks.event.tap("node-host:run-watcher", (event) => {
      // Every committed event passes here; requests waiting on runs they drive need none of them.
      if (this.waiters.size === 0 || !RESTING_EVENTS.has(event.type)) return;
      const waiting = this.waiters.get(event.runId);
      if (waiting) for (const wake of waiting) wake(event);
    });
  }

  /** The run's result once it rests, or its current result after `timeoutMs` (or `release()`, at once after it). */
  async waitForRest(runId: string, timeoutMs: number): Promise<RunResult> {
    if (timeoutMs <= 0 || this.released) return this.runtime.getRun(runId);
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
   * The result of `drive`, a drive of `runId` this process runs, or the run as it stands after
   * `timeoutMs` (or `release()`, at once after it). The drive ends when the run rests (and its lease is released,
   * as `runtime.run()` resolves), so no event is watched for it;
   * a drive that fails leaves the run to whoever takes it over, and the rest of `timeoutMs` is
   * waited on its events, as `waitForRest` does.
   */
  async untilDriven(runId: string, drive: Promise<RunResult>, timeoutMs: number): Promise<RunResult> {
    if (this.released) return this.runtime.getRun(runId);
    const deadline = Date.now() + timeoutMs;
    let wake!: () => void;
    const woken = new Promise<"woken">((resolve) => (wake = () => resolve("woken")));
    this.drivenWaits.add(wake);
    const timer = setTimeout(wake, timeoutMs);
    let ended: RunResult | "woken" | "failed";
    try {
      ended = await Promise.race([drive.catch(() => "failed" as const), woken]);
    } finally {
      clearTimeout(timer);
      this.drivenWaits.delete(wake);
    }
    if (ended === "woken") return this.runtime.getRun(runId);
    if (ended === "failed") return this.waitForRest(runId, deadline - Date.now());
    return ended;
  }

  /**
   * Start watching `runId` now, before it can rest: for a run this process
   * has just created and not yet started, whose rest can only come after this
   * call, so no read of its current state is needed first. `rested` resolves
   * with its result once it rests, or its current result after `timeoutMs`
   * (or `release()`, at once after it); call `cancel` instead when not waiting after all.
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
        if (this.released) wake();
        else timer = setTimeout(wake, timeoutMs);
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

  /** Answer every waiting request now, and every later one at once (shutdown): they report the run as it stands. */
  release(): void {
    this.released = true;
    for (const set of this.waiters.values()) for (const wake of set) wake();
    for (const wake of this.drivenWaits) wake();
  }
}
