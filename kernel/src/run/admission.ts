import { AssemblyLineError } from "@assemblyline-agents/core";

/** Thrown when a brand-new run finds no capacity and no room in the wait queue. */
export class RunCapacityError extends AssemblyLineError {
  readonly retryAfterMs: number;
  constructor(active: number, queued: number, retryAfterMs: number) {
    super("AL_ERR_RUN_CAPACITY", `${active} runs are executing and ${queued} are queued, the configured maximum`, {
      fix: `Retry after ${retryAfterMs} ms, or raise maxConcurrentRuns / maxQueuedRuns (ASSEMBLY_LINE_MAX_CONCURRENT_RUNS / ASSEMBLY_LINE_MAX_QUEUED_RUNS).`,
      details: { retryAfterMs },
    });
    this.name = "AssemblyLineError";
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * In-process admission for brand-new runs: at most `maxConcurrent` execute, at
 * most `maxQueued` wait in FIFO order, the rest are refused. Resumes bypass it.
 */
export class Admission {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private recentDurationMs = 1000;

  constructor(
    readonly maxConcurrent: number,
    readonly maxQueued: number,
  ) {}

  hasCapacity(): boolean {
    return this.active < this.maxConcurrent;
  }

  get load(): { active: number; queued: number } {
    return { active: this.active, queued: this.waiting.length };
  }

  /** Wait for a slot; throws RunCapacityError when the queue is full too. */
  async acquire(): Promise<() => void> {
    if (this.active < this.maxConcurrent) {
      this.active += 1;
    } else if (this.waiting.length < this.maxQueued) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      throw new RunCapacityError(this.active, this.waiting.length, Math.max(100, Math.round(this.recentDurationMs)));
    }
    const started = Date.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // A moving average of run time is the honest retry hint.
      this.recentDurationMs = this.recentDurationMs * 0.8 + (Date.now() - started) * 0.2;
      const next = this.waiting.shift();
      if (next) next();
      else this.active -= 1;
    };
  }
}
