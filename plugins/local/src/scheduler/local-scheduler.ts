import { AssemblyLineError, MAX_TIMER_MS, isScheduleClaimableBy, isScheduleStateStore, noopLogger, type RuntimeLogger, type ScheduleDispatch, type Scheduler, type ScheduleRecord, type SchedulerStartOptions, type ScheduleStateStore } from "@assemblyline-agents/core";
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { describeOptions, unknownOptions } from "../known-options.js";

const DEFAULT_POLL_INTERVAL_MS = 1_000;
const DEFAULT_LEASE_MS = 60_000;
const DEFAULT_BATCH_SIZE = 10;
const SCHEDULER_OPTIONS: readonly (keyof LocalSchedulerOptions)[] = ["store", "pollIntervalMs", "leaseMs", "owner", "batchSize", "logger", "now"];

export interface LocalSchedulerOptions {
  /**
   * Where schedules live; several schedulers may share one store. A function is
   * called at start(), for a scheduler made before the state adapter exists.
   */
  store: ScheduleStateStore | (() => ScheduleStateStore | undefined);
  /** How often to look for due schedules. Default 1 000 ms. */
  pollIntervalMs?: number;
  /**
   * How long a claimed schedule stays leased to this scheduler. A dispatch that
   * fails is retried once the lease expires; one that runs longer than the lease
   * may be dispatched again by another scheduler, so keep dispatch short (enqueue
   * a run, do not wait for it). Default 60 000 ms. It must be below the host's
   * automationCatchUpMs (default 180 000 ms): start() refuses it otherwise, when
   * the host passes that value.
   */
  leaseMs?: number;
  /** This scheduler's lease owner id. Default: host, pid and a random suffix. */
  owner?: string;
  /** Schedules claimed per poll at most. Default 10. */
  batchSize?: number;
  /** Where failed dispatches and claims are reported. Left out, the logger the host passes to start(), else none. */
  logger?: RuntimeLogger;
  /**
   * The clock, for tests: given, it decides what is due and when a lease ends, in place of the
   * store's. Left out, the store's own clock does (the database's, for PostgreSQL), so replicas whose
   * clocks drift apart still take a schedule once and never before it is due; this host's clock then
   * only times the next run of a dispatch that names none.
   */
  now?: () => Date;
}

/**
 * The embedded Scheduler: polls a ScheduleStateStore, leases due schedules,
 * dispatches each once, then moves it to its next time. The lease makes
 * schedulers in several processes on one store dispatch a schedule once.
 */
export class LocalScheduler implements Scheduler {
  readonly owner: string;
  private readonly storeSource: LocalSchedulerOptions["store"];
  private store: ScheduleStateStore | undefined;
  private readonly pollIntervalMs: number;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  /** The constructor's logger, which wins over the start's. */
  private readonly ownLogger: RuntimeLogger | undefined;
  private logger: RuntimeLogger;
  /** The dispatch-time clock: the next run of a dispatch that names none is counted from it. */
  private readonly now: () => Date;
  /** The caller's `now`, passed to every claim; left out, the store's clock decides what is due and when leases end. */
  private readonly claimClock: (() => Date) | undefined;
  private dispatch: ScheduleDispatch | undefined;
  private agentId: string | undefined;
  private warnedForeign = false;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** Bumped by each start() and stop(): only the loop of the current generation polls again. */
  private generation = 0;
  /** The last stop()'s wait for its poll and dispatches; a start() waits for it before polling. */
  private stopping: Promise<void> = Promise.resolve();

  constructor(options: LocalSchedulerOptions) {
    this.storeSource = options?.store;
    if (typeof this.storeSource !== "function") this.store = scheduleStore(this.storeSource);
    const unknown = unknownOptions(options, SCHEDULER_OPTIONS);
    if (unknown.length > 0) {
      throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `LocalScheduler ${describeOptions(unknown)} unknown`, { fix: `The options are ${SCHEDULER_OPTIONS.join(", ")}; check the spelling.`, details: { options: unknown } });
    }
    this.pollIntervalMs = positive(options.pollIntervalMs, DEFAULT_POLL_INTERVAL_MS, "pollIntervalMs", MAX_TIMER_MS);
    this.leaseMs = positive(options.leaseMs, DEFAULT_LEASE_MS, "leaseMs", MAX_TIMER_MS);
    this.batchSize = positive(options.batchSize, DEFAULT_BATCH_SIZE, "batchSize", Number.MAX_SAFE_INTEGER, true);
    this.owner = options.owner ?? `local-scheduler:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.ownLogger = options.logger;
    this.logger = options.logger ?? noopLogger();
    this.now = options.now ?? (() => new Date());
    this.claimClock = options.now;
  }

  /**
   * Begin polling (the first poll starts at once). With `agentId`, claim only that agent's
   * schedules and those of no agent; failures go to `logger` unless the scheduler was made with
   * one; with `automationCatchUpMs`, a lease not below it is refused. Call stop() before starting again;
   * a start() while that stop() still waits for its poll and dispatches first waits for them too, so
   * two loops never poll at once.
   */
  async start(dispatch: ScheduleDispatch, options: SchedulerStartOptions = {}): Promise<void> {
    if (this.dispatch !== undefined) {
      throw new Error(`LocalScheduler ${this.owner} is already started; call stop() before start() again`);
    }
    refuseLeaseNotBelowCatchUp(this.leaseMs, options.automationCatchUpMs);
    this.store ??= scheduleStore(typeof this.storeSource === "function" ? this.storeSource() : this.storeSource);
    this.logger = this.ownLogger ?? options.logger ?? noopLogger();
    this.dispatch = dispatch;
    this.agentId = options.agentId;
    const generation = ++this.generation;
    await this.stopping;
    // A stop() while this start waited ends it before its loop begins.
    if (generation === this.generation) this.schedule(0, generation);
  }

  /** Stop polling and wait for the poll and the dispatches already running to settle. */
  async stop(): Promise<void> {
    this.dispatch = undefined;
    this.generation += 1;
    clearTimeout(this.timer);
    this.timer = undefined;
    const stopping = this.settle();
    this.stopping = stopping;
    await stopping;
  }

  private async settle(): Promise<void> {
    await this.polling;
    await Promise.allSettled([...this.inFlight]);
  }

  private schedule(delayMs: number, generation: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const polling = this.poll().finally(() => {
        if (this.polling === polling) this.polling = undefined;
        // A poll that outlived its stop() must not start a second loop beside a newer start()'s.
        if (generation === this.generation) this.schedule(this.pollIntervalMs, generation);
      });
      this.polling = polling;
    }, delayMs);
    // A scheduler alone should not keep the process alive; the host's server does.
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    const { dispatch, store } = this;
    if (dispatch === undefined || store === undefined) return;
    let due: ScheduleRecord[];
    try {
      due = await store.claimDueSchedules({
        owner: this.owner,
        ttlMs: this.leaseMs,
        ...(this.claimClock !== undefined ? { now: this.claimClock() } : {}),
        limit: this.batchSize,
        ...(this.agentId !== undefined ? { agentId: this.agentId } : {}),
      });
    } catch (error) {
      this.logger.error({ err: error, owner: this.owner }, "claiming due schedules failed; trying again next poll");
      return;
    }
    for (const schedule of due) {
      if (!isScheduleClaimableBy(schedule, this.agentId)) {
        this.leaveForeign(schedule);
        continue;
      }
      const run = this.run(store, schedule, dispatch).finally(() => this.inFlight.delete(run));
      this.inFlight.add(run);
    }
  }

  /**
   * Another agent's schedule from a store that ignores the claim's agentId: not dispatched, and left
   * leased until the lease runs out, when its own agent's scheduler takes it. Released at once, it
   * would come back first in every claim (the earliest due) and hold this agent's rows out for good.
   */
  private leaveForeign(schedule: ScheduleRecord): void {
    if (this.warnedForeign) return;
    this.warnedForeign = true;
    this.logger.warn(
      { event: "state.claim_filter_ignored", scheduleId: schedule.id, agentId: schedule.agentId },
      "the state store handed over another agent's schedule: it ignores claimDueSchedules' agentId, so that schedule waits for this lease to run out; upgrade the state adapter",
    );
  }

  private async run(store: ScheduleStateStore, schedule: ScheduleRecord, dispatch: ScheduleDispatch): Promise<void> {
    let next: Date;
    try {
      const result = await dispatch(schedule.id, schedule);
      next = result?.nextRunAt ?? nextRunAt(schedule, this.now());
    } catch (error) {
      // Leave the lease to expire: the schedule is claimed and dispatched again after leaseMs.
      this.logger.warn({ err: error, scheduleId: schedule.id }, "schedule dispatch failed; it is retried when its lease expires");
      return;
    }
    try {
      // Moved only if the row is still as claimed: an edit made during the dispatch is kept (a new
      // schedule that kept the due time as well as one that re-timed the row).
      await store.completeScheduleRun(schedule.id, this.owner, next, schedule.nextRunAt, schedule);
    } catch (error) {
      this.logger.error({ err: error, scheduleId: schedule.id }, "completing a schedule run failed; it may be dispatched again when its lease expires");
    }
  }
}

/** Where a schedule that runs once rests after its run: never due again. */
export const RUN_ONCE_RESTS_AT = new Date("9999-12-31T00:00:00.000Z");

/**
 * One interval after the time it was due; if the process was down for several
 * intervals, the first slot after `now` instead of a burst of catch-up runs.
 * An interval of 0 is a schedule that runs once: it then rests (RUN_ONCE_RESTS_AT).
 */
export function nextRunAt(schedule: Pick<ScheduleRecord, "intervalMs" | "nextRunAt">, now: Date): Date {
  // Read as "every 0 ms", it would be due again at every poll for ever.
  if (!(schedule.intervalMs > 0)) return RUN_ONCE_RESTS_AT;
  const interval = Math.max(1, schedule.intervalMs);
  const due = Date.parse(schedule.nextRunAt);
  const base = Number.isFinite(due) ? due : now.getTime();
  const missed = Math.floor((now.getTime() - base) / interval);
  return new Date(base + interval * Math.max(1, missed + 1));
}

/**
 * A lease of automationCatchUpMs or longer makes a failed dispatch wait out the catch-up window:
 * its due time, and those after it, then collapse into one run instead of running each.
 */
function refuseLeaseNotBelowCatchUp(leaseMs: number, catchUpMs: number | undefined): void {
  if (catchUpMs === undefined || leaseMs < catchUpMs) return;
  throw new AssemblyLineError(
    "AL_ERR_SCHEDULER_CONFIG",
    `LocalScheduler leaseMs is ${leaseMs}, not below the runtime's automationCatchUpMs (${catchUpMs}): a dispatch that failed would be retried only after its due time is past the catch-up window, and the due times it left would collapse into one run instead of running each`,
    {
      fix: `Set the scheduler's leaseMs (localScheduler({ leaseMs }) in gateway.ts, or new LocalScheduler({ leaseMs })) below ${catchUpMs}, or raise automationCatchUpMs (RuntimeOptions) above ${leaseMs}; the defaults are 60 000 and 180 000.`,
      details: { leaseMs, automationCatchUpMs: catchUpMs },
    },
  );
}

function scheduleStore(store: unknown): ScheduleStateStore {
  if (!isScheduleStateStore(store)) {
    throw new AssemblyLineError("AL_ERR_GATEWAY_SLOT", "the local scheduler has no store with the schedules facet (claimDueSchedules, completeScheduleRun, ...)", {
      fix: "Use a state adapter that implements schedules (localState(), postgres), or pass one: new LocalScheduler({ store: state }).",
    });
  }
  return store;
}

/** `value`, a positive number (whole when `whole`) of at most `max` (a timer's delay waits at most MAX_TIMER_MS), else `fallback` when left out. */
function positive(value: number | undefined, fallback: number, name: string, max: number, whole = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !(value > 0) || value > max || (whole && !Number.isInteger(value))) {
    const kind = whole ? "a positive whole number" : `a positive number of at most ${max}`;
    throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `LocalScheduler option ${name} is ${JSON.stringify(value)}, not ${kind}`, {
      fix: `Pass ${name} as ${kind}, or omit it for the default.`,
      details: { option: name, value },
    });
  }
  return value;
}
