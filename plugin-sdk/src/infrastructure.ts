import type { ScheduleRecord } from "./state/facets.js";

/** What a dispatch tells the scheduler: the schedule's next due time. */
export interface ScheduleDispatchResult {
  /** Where the schedule moves after this dispatch. */
  nextRunAt: Date;
}

/**
 * Starts the work of one due schedule, while the scheduler holds its lease.
 * Must be short (submit a run, do not wait for it). A throw leaves the lease to
 * expire, so the same due time is dispatched again (dispatches are idempotent
 * per schedule and due time). Without a result, the scheduler moves the
 * schedule by its intervalMs.
 */
export type ScheduleDispatch = (scheduleId: string, claimed: ScheduleRecord) => Promise<ScheduleDispatchResult | void>;

/** What a host tells its scheduler when it starts it. */
export interface SchedulerStartOptions {
  /**
   * The host's agent: claim only its schedules and those of no agent (`ScheduleClaimOptions`), so
   * hosts of several agents on one store each dispatch their own. Left out, every agent's.
   */
  agentId?: string;
  /**
   * The host's logger. A scheduler reports there what it cannot throw to anyone: a dispatch that
   * threw (retried when its lease expires), a claim or a completeScheduleRun that failed. A
   * scheduler made with a logger of its own keeps that one. Left out (and none of its own), those
   * failures are not logged.
   */
  logger?: RuntimeLogger;
  /**
   * The host's `RuntimeOptions.automationCatchUpMs` (default 180 000): an automation's due time
   * later than this collapses with the others missed into one run. A scheduler whose lease is not
   * below it should refuse to start: a failed dispatch would be retried only once its due time is
   * past the window, so the due times it left collapse instead of running each. Left out, the
   * scheduler cannot check (the runtime then warns `automation.lease_not_below_catch_up` at the
   * first dispatch whose lease is that long).
   */
  automationCatchUpMs?: number;
}

/** Leases due schedules and dispatches each due time once. */
export interface Scheduler {
  start(dispatch: ScheduleDispatch, options?: SchedulerStartOptions): Promise<void>;
  stop(): Promise<void>;
}

/** Packages and ships a built agent. */
export interface DeployTarget {
  readonly name: string;
  deploy(args: { artifactRoot: string; env: Record<string, string | undefined> }): Promise<{ url?: string; id: string }>;
}

export interface RateLimitRequest {
  capacity: number;
  refillPerSecond: number;
  cost?: number;
  now?: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  remaining: number;
  /** When not allowed, how long until `cost` tokens are available. */
  retryAfterMs: number;
}

/** A token-bucket store; one async call so shared stores are easy to implement. */
export interface RateLimiterStore {
  take(key: string, request: RateLimitRequest): Promise<RateLimitDecision>;
}

/** Structured logger (pino-compatible subset). */
export interface RuntimeLogger {
  debug(fields: Record<string, unknown>, msg?: string): void;
  info(fields: Record<string, unknown>, msg?: string): void;
  warn(fields: Record<string, unknown>, msg?: string): void;
  error(fields: Record<string, unknown>, msg?: string): void;
}

export function noopLogger(): RuntimeLogger {
  const noop = () => undefined;
  return { debug: noop, info: noop, warn: noop, error: noop };
}
