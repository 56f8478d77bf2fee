import { AssemblyLineError, MAX_TIMER_MS, type RuntimeLogger } from "@assemblyline-agents/core";

/** The drain steps, in the order the spec fixes. Each must not throw past its own failure. */
export interface ShutdownSteps {
  /** /readyz answers 503 and ingress refuses new turns. */
  markDraining(): void;
  /** Stop listening; wait (until `deadline`) for in-flight requests. */
  closeListener(deadline: number): Promise<void>;
  stopScheduler(): Promise<void>;
  /** Mailbox, outbox, recovery sweep. */
  stopWorkers(): Promise<void>;
  runtimeIdle(): Promise<void>;
  /** Bounded by `timeoutMs`: each sink drops what it has not sent by then. */
  flushTelemetry(timeoutMs: number): Promise<void>;
  closeState(): Promise<void>;
  /** Whatever outlived the deadline (open connections). */
  forceClose(): void;
}

export const SHUTDOWN_STEPS = ["readyz", "listener", "scheduler", "workers", "runtime.onIdle", "telemetry.flush", "state.close"] as const;

/**
 * The least time telemetry gets to flush, even when waiting for runs used the
 * whole timeout: spans of the runs just drained are worth a few seconds, a
 * backend that never answers is not worth the state's close.
 */
export const TELEMETRY_FLUSH_FLOOR_MS = 5_000;

/**
 * How much longer than the bound it gave the sinks the shutdown waits for their
 * flush: one that honours it ends a moment after (its aborted request settles)
 * and is not reported late; one that ignores it does not hold the state's close.
 */
export const TELEMETRY_FLUSH_GRACE_MS = 250;

/**
 * Build an idempotent shutdown: the first call drains in order and every call
 * returns the same promise. Waiting for in-flight work (requests, the
 * scheduler's dispatches, the workers, runs) is bounded by `timeoutMs` overall; flush and close always run after it, the flush bounded
 * by what is left of the timeout or TELEMETRY_FLUSH_FLOOR_MS, the longer: the sinks are given that
 * bound, and a sink that overruns it is not waited for past TELEMETRY_FLUSH_GRACE_MS more.
 * A step that throws does not stop the others; once every step ran, the promise rejects with
 * AL_ERR_HOST_SHUTDOWN naming the steps that failed (a step left at the timeout is not one).
 */
export function createShutdown(steps: ShutdownSteps, logger: RuntimeLogger, defaultTimeoutMs: number): (options?: { timeoutMs?: number }) => Promise<void> {
  let done: Promise<void> | undefined;
  return (options = {}) => {
    done ??= (async () => {
      const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
      const started = Date.now();
      const deadline = started + timeoutMs;
      logger.info({ event: "shutdown.started", timeoutMs }, "graceful shutdown started");
      const failed: Array<{ step: (typeof SHUTDOWN_STEPS)[number]; error: unknown }> = [];
      const step = async (name: (typeof SHUTDOWN_STEPS)[number], work: () => Promise<void> | void) => {
        try {
          await work();
          logger.info({ event: "shutdown.step", step: name, elapsedMs: Date.now() - started }, `shutdown: ${name} done`);
        } catch (error) {
          failed.push({ step: name, error });
          logger.error({ event: "shutdown.step_failed", step: name, err: String(error) }, `shutdown: ${name} failed; continuing`);
        }
      };
      await step("readyz", () => steps.markDraining());
      await step("listener", () => steps.closeListener(deadline));
      // A dispatch or delivery stuck on a hung store call must not hold the drain for good: what is
      // abandoned keeps its lease, and another replica (or the next boot) takes it once that expires.
      const untilDeadline = async (name: "scheduler" | "workers", work: Promise<void>) => {
        if (!(await bounded(work, deadline - Date.now()))) {
          logger.warn({ event: "shutdown.step_timeout", step: name, timeoutMs }, `shutdown: ${name} still busy at the shutdown timeout; going on without it (its leases expire and are taken again)`);
        }
      };
      await step("scheduler", () => untilDeadline("scheduler", steps.stopScheduler()));
      await step("workers", () => untilDeadline("workers", steps.stopWorkers()));
      await step("runtime.onIdle", async () => {
        const idle = await bounded(steps.runtimeIdle(), deadline - Date.now());
        if (!idle) {
          logger.warn(
            { event: "shutdown.timeout", timeoutMs },
            "runs still executing at the shutdown timeout; they stay leased and the next boot resumes them once the lease expires",
          );
        }
      });
      await step("telemetry.flush", async () => {
        const flushMs = Math.max(deadline - Date.now(), TELEMETRY_FLUSH_FLOOR_MS);
        if (!(await bounded(steps.flushTelemetry(flushMs), flushMs + TELEMETRY_FLUSH_GRACE_MS))) {
          logger.warn({ event: "shutdown.telemetry_flush_timeout", timeoutMs: flushMs }, "telemetry did not flush in time; closing the state without waiting for it");
        }
      });
      await step("state.close", () => steps.closeState());
      steps.forceClose();
      if (failed.length > 0) {
        // Said, not only logged: the process's exit code (1) and an embedder awaiting shutdown() must tell a
        // drain that lost something (the state's last writes unflushed, say) from one that completed.
        const names = failed.map((entry) => entry.step);
        logger.error({ event: "shutdown.failed", steps: names, elapsedMs: Date.now() - started }, `graceful shutdown completed, but ${names.join(", ")} failed`);
        throw new AssemblyLineError("AL_ERR_HOST_SHUTDOWN", `shutdown: ${names.join(", ")} failed; the other steps ran`, {
          fix: "Read the shutdown.step_failed log lines for each step's error and fix what they name (a state store that cannot flush or close, say).",
          details: { steps: names },
          cause: new AggregateError(
            failed.map((entry) => entry.error),
            `shutdown steps failed: ${names.join(", ")}`,
          ),
        });
      }
      logger.info({ event: "shutdown.completed", elapsedMs: Date.now() - started }, "graceful shutdown completed");
    })();
    return done;
  };
}

/**
 * true when `work` settled within `ms`. A `shutdown({ timeoutMs })` longer than a timer can wait
 * (MAX_TIMER_MS, about 24.8 days) waits that long: Node would fire the timer at once.
 */
async function bounded(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.min(Math.max(0, ms), MAX_TIMER_MS))));
  try {
    return await Promise.race([work.then(() => true as const), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
