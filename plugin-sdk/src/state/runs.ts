import type { NewRunEvent, RunEvent } from "../events.js";
import type { JsonValue } from "../json.js";

export type RunStatus = "queued" | "running" | "waiting_approval" | "waiting_input" | "completed" | "failed";

/** What started the run. */
export interface RunInput {
  message: string;
  metadata: Record<string, JsonValue>;
  /** The channel that produced the turn, when any. */
  channel?: {
    name: string;
    metadata?: Record<string, JsonValue>;
    /** The turn's `deliveryMetadata`: for the channel's `deliver()` only, never shown to the model, resolvers or tools. */
    delivery?: Record<string, JsonValue>;
  };
  /** Set on a subagent's run: the run and tool call that spawned it. */
  parent?: SubagentParent;
  /**
   * True when the host forced the run's model (`RunAgentOptions.model`): the run starts on
   * `modelSpec` whatever a resolver declares, on whichever replica starts it.
   */
  modelForced?: boolean;
}

/** How a subagent's run is linked to the run that spawned it. */
export interface SubagentParent {
  /** The spawning run (`parentRunId`). */
  runId: string;
  /** The spawning tool call of that run. */
  callId: string;
  /** The subagent's path below the root agent, e.g. `researcher` or `researcher/fact_checker`. */
  subagent: string;
  /** 1 for a child of the root agent's run, 2 for a grandchild, ... */
  depth: number;
  /** The run whose sandbox a `workspace: "shared"` subagent uses. */
  sandboxRunId: string;
  /**
   * The conversation whose daily budgets (`maxConversationTokensPerDay`, `maxConversationCostUsdPerDay`)
   * the subagent's model calls count against: the root run's, null when it has none. Absent on runs
   * spawned before it existed, which count against their own conversation.
   */
  budgetConversationId?: string | null;
  /**
   * What the spawning run had left of its token and cost budgets (`maxTokens`, `maxCostUsd`: its
   * limit less what it and its earlier subagents spent) when it spawned this run: the subagent's own
   * limits are lowered to it. Absent when the spawning run had neither budget, and on runs spawned
   * before it existed.
   */
  budgetLeft?: { maxTokens?: number; maxCostUsd?: number };
  /**
   * The spawning run's last event when `budgetLeft` was counted: subagents of that run that had not
   * completed by then (spawned beside this one) are not in it, and share the same ceiling with this
   * run, so that subagents spawned at the same time together never spend it twice. Absent on runs
   * spawned before it existed.
   */
  budgetSeq?: number;
}

export interface RunError {
  code?: string;
  message: string;
}

/** A time-bounded claim on a delivery or a schedule. */
export interface Lease {
  owner: string;
  /** ISO-8601 time after which another worker may take it over. */
  expiresAt: string;
}

/**
 * A run's lease. `token` is its fencing token: every take of the lease (acquire,
 * claim) gets a token higher than any the run had before, a renewal keeps it,
 * and a release does not reset the run's counter.
 */
export interface RunLease extends Lease {
  token: number;
}

/**
 * A run's lease as a take (acquire, claim) hands it out. `replaced` is the lease the take replaced, as it
 * stood: one that had expired, or whose holder the store found gone, or the taker's own. Absent when the
 * run had none (never leased, or released). It tells the runtime by when the work of a run it recovers had
 * stopped at the latest: the time up to the lapse (or the take, if sooner) counts as active towards
 * `maxDurationMs`, not as idle. A store that leaves it out is still correct; such recoveries then count the
 * whole gap since the run's last event as idle.
 */
export interface TakenRunLease extends RunLease {
  replaced?: Lease;
}

/** A run a recovery claim leased, with the lease the claim replaced (see `TakenRunLease.replaced`). */
export type ClaimedRunRecord = RunRecord & { replacedLease?: Lease };

/**
 * What a writer proves it holds: writes of a run's records made with a fence
 * commit only while the run's lease still has this owner and token (checked
 * atomically with the write), and fail with AL_ERR_RUN_LEASE_LOST otherwise.
 */
export interface RunFence {
  owner: string;
  token: number;
}

/** Statuses a run never leaves: no lease is taken or renewed for them. */
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ["completed", "failed"];

/** Every status a run may have: a store refuses any other (the run would be neither runnable nor finished). */
export const RUN_STATUSES: readonly RunStatus[] = ["queued", "running", "waiting_approval", "waiting_input", "completed", "failed"];

export interface RunRecord {
  id: string;
  agentId: string;
  agentRevision: string;
  conversationId: string | null;
  status: RunStatus;
  /** The persisted model spec: engines are chosen from it on every resume. */
  modelSpec: string;
  input: RunInput;
  output: JsonValue | null;
  error: RunError | null;
  /** Highest event seq recorded (0 before the first event). */
  lastSeq: number;
  /** Highest seq whose observers (hooks, sinks) have run. */
  observedSeq: number;
  lease: RunLease | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * Whether `run` is a run of agent `agentId`: its own, or one of its subagents' (agent id
 * `<agent id>/<path>`). One store may hold several agents' runs (e.g. one database): a runtime,
 * host or command acts on and shows only its agent's, and every one of them decides it here.
 */
export function isRunOfAgent(run: { agentId: string }, agentId: string): boolean {
  // The "/" keeps agent "support" from claiming the runs of agent "support-eu".
  return run.agentId === agentId || run.agentId.startsWith(`${agentId}/`);
}

/**
 * The agent revision a run continues on: the one the last `run.migrated` event moved it to, else the
 * one it started under (`agentRevision`). The runtime drives it on that build, keeps that build from
 * pruning, and `runs list` shows it; all of them decide it here. Only a paused run can be moved, so a
 * queued run (never driven yet) is answered without reading its events.
 */
export async function revisionOfRun(runs: Pick<RunStore, "listEvents">, run: RunRecord): Promise<string> {
  if (run.status === "queued") return run.agentRevision;
  const migrated = (await runs.listEvents(run.id)).findLast((event) => event.type === "run.migrated");
  return migrated ? String(migrated.data.to) : run.agentRevision;
}

/** Whether a lease is free at `now`: none, or one that has expired (its holder may be gone; a store may hand it over). */
export function isLeaseFree(lease: { expiresAt: string } | null, now: Date = new Date()): boolean {
  return lease === null || Date.parse(lease.expiresAt) <= now.getTime();
}

/**
 * Whether a claim asked with `agentId` (`ClaimOptions.agentId`) may take a record of `run`: any
 * record when no agent is asked for; else a record of a run of that agent or of its subagents
 * (`isRunOfAgent`). A record whose run is gone is no agent's. Stores test it before the limit.
 */
export function isClaimableBy(run: { agentId: string } | undefined, agentId: string | undefined): boolean {
  return agentId === undefined || (run !== undefined && isRunOfAgent(run, agentId));
}

export interface NewRun {
  id: string;
  agentId: string;
  agentRevision: string;
  conversationId?: string | null;
  modelSpec: string;
  input: RunInput;
  status?: RunStatus;
  /** Dedupe key (e.g. a provider event id): a second createRun with it returns the first run. */
  idempotencyKey?: string;
}

export type ToolCallStatus =
  | "requested"
  | "waiting_approval"
  | "approved"
  | "denied"
  | "waiting_input"
  | "completed"
  | "failed";

export interface ToolCallRecord {
  runId: string;
  callId: string;
  toolName: string;
  input: JsonValue;
  /** sha256 of the canonical JSON input; binds an approval to this exact call. */
  inputDigest: string;
  status: ToolCallStatus;
  /** The full, persisted result. */
  output: JsonValue | null;
  /** What the model was shown (`toModelOutput`). */
  modelOutput: JsonValue | null;
  error: string | null;
  approvalId: string | null;
  /** The question asked through ctx.askQuestion, while waiting for input. */
  question: JsonValue | null;
  createdAt: string;
  updatedAt: string;
}

export interface StepRecord {
  runId: string;
  key: string;
  result: JsonValue;
  metadata: Record<string, JsonValue>;
  createdAt: string;
}

export interface CheckpointRecord {
  runId: string;
  /** The engine's opaque, versioned continuation. */
  continuation: JsonValue;
  createdAt: string;
}

export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface DeliveryRecord {
  id: string;
  runId: string;
  channel: string;
  conversationId: string | null;
  payload: JsonValue;
  status: DeliveryStatus;
  /**
   * Attempts started, counting the one claimed now: `claimDeliveries` adds one in the write
   * that takes the lease (0 before the first claim), so an attempt whose sender died before
   * recording an outcome still counts, and a claimed delivery's own attempt is `attempts`. A claim
   * whose holder sent nothing gives its attempt back (`failDelivery`'s `countAttempt: false`).
   */
  attempts: number;
  /** ISO time before which no worker claims it. */
  availableAt: string;
  lastError: string | null;
  lease: Lease | null;
  createdAt: string;
  updatedAt: string;
}

export interface NewDelivery {
  id: string;
  channel: string;
  conversationId?: string | null;
  payload: JsonValue;
}

/**
 * State changes that commit atomically with the events describing them.
 * Each present field is applied; absent fields are left alone.
 */
export interface RunStateChange {
  run?: Partial<Pick<RunRecord, "status" | "modelSpec" | "output" | "error" | "conversationId">>;
  /** Upsert by (runId, callId). */
  toolCall?: ToolCallRecord;
  /** Insert; a step key is written once per run and never overwritten. */
  step?: StepRecord;
  /** Set the run's latest checkpoint, or clear it with null. */
  checkpoint?: CheckpointRecord | null;
  /** Enqueue a delivery obligation. */
  delivery?: NewDelivery;
}

/** Options of `RunStore.createRun`. */
export interface CreateRunOptions {
  /**
   * Take the run's lease for `owner` in the same write as the creation (a fresh
   * fencing token, expiring `ttlMs` from now), so the creator drives it with no
   * write of its own to take the lease. Only a run this call creates is leased;
   * an existing run (same id or idempotency key) is returned untouched.
   */
  lease?: { owner: string; ttlMs: number };
}

/** What `RunStore.createRun` returns. */
export interface CreatedRun {
  run: RunRecord;
  /** False when a run with this id or idempotency key already existed (that run is returned). */
  created: boolean;
  /** The run's `run.created` event (seq 1), when this call created it. */
  createdEvent?: RunEvent;
}

/** Options of `RunStore.releaseRunLease`. */
export interface ReleaseOptions {
  /** Observers have seen events up to this seq: moves `observedSeq` forward (never back), in the same write, whoever holds the lease. */
  observedSeq?: number;
}

/** Options of `RunStore.failDelivery`. */
export interface FailDeliveryOptions {
  /**
   * `false`: this claim sent nothing (the outbox hands a reply back unsent, for a host of another
   * build that can send it), so the attempt its claim counted is given back: `attempts` - 1, in the
   * same atomic write as the rest of the call, and like it only while `owner` holds the lease. Any
   * other value, or none, leaves the count as the claim left it. A store built before the option
   * ignores it and keeps the attempt counted (see the outbox's hand-back).
   */
  countAttempt?: boolean;
}

/** Options of `RunStore.appendEvents`. */
export interface AppendOptions {
  expectedLastSeq?: number;
  fence?: RunFence;
  /** Observers have seen events up to this seq: moves `observedSeq` forward, never back. */
  observedSeq?: number;
}

export interface RunListFilter {
  status?: RunStatus | RunStatus[];
  agentId?: string;
  conversationId?: string;
  /**
   * Only runs whose observers (hooks, telemetry) have not seen every event yet: `observedSeq < lastSeq`.
   * What a host's catch-up looks for when it starts; a store may read every run to answer it (an
   * index on the two positions would cost every append the update it makes in place).
   */
  observersBehind?: boolean;
  /** Page size; default 50. */
  limit?: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
}

export interface RunPage {
  runs: RunRecord[];
  nextCursor: string | null;
}

export interface ClaimOptions {
  owner: string;
  ttlMs: number;
  limit?: number;
  /** Clock override for tests; defaults to now. */
  now?: Date;
  /**
   * Claim only what belongs to this agent: its runs and its subagents' (`isRunOfAgent`), and
   * for `claimDeliveries` the deliveries of those runs. Left out, every agent's. One store may
   * hold several agents' runs (e.g. one database): a host that claimed another agent's run or
   * reply would drive it with its own build or deliver it through its own channel of that name.
   * A store must apply it before `limit` (other agents' records never use up a claim) and in the
   * same atomic step as the lease. Callers still check what comes back and leave another agent's
   * record alone, so a store built before the option works while one agent uses it.
   */
  agentId?: string;
}

/**
 * The required facet: runs, their events, tool calls, steps, checkpoints,
 * delivery obligations (the durable queue), leases and idempotency.
 */
export interface RunStore {
  /**
   * Create a run and record `run.created` as seq 1, atomically. Idempotent on
   * `idempotencyKey`. With `options.lease`, a created run is leased to its creator
   * in the same write (`run.lease` holds the lease).
   */
  createRun(run: NewRun, options?: CreateRunOptions): Promise<CreatedRun>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Newest first. */
  listRuns(filter?: RunListFilter): Promise<RunPage>;
  /**
   * Append events with contiguous seqs and apply `change` in the same transaction.
   * With `expectedLastSeq`, refuse (AL_ERR_EVENT_SEQ) when the log moved on.
   * With `fence`, refuse (AL_ERR_RUN_LEASE_LOST) unless the run's lease still has
   * that owner and token, checked in the same transaction as the write.
   * With `observedSeq`, also do what `markObserved(runId, observedSeq)` does, in the
   * same transaction: the runtime sends where observers are with the run's next
   * write instead of as a write of its own.
   */
  appendEvents(
    runId: string,
    events: NewRunEvent[],
    change?: RunStateChange,
    options?: AppendOptions,
  ): Promise<RunEvent[]>;
  /**
   * Events in seq order, after `afterSeq` (exclusive), at most `limit`; either one that is not a whole
   * number >= 0 is refused (AL_ERR_STATE_INPUT_INVALID).
   */
  listEvents(runId: string, options?: { afterSeq?: number; limit?: number }): Promise<RunEvent[]>;
  /**
   * Record that observers have seen events up to `seq` (never moves backwards). A `seq` past the
   * run's `lastSeq` is refused (AL_ERR_STATE_INPUT_INVALID): the events appended later would never
   * be observed. So is an `observedSeq` option past the log after its write's own events.
   */
  markObserved(runId: string, seq: number): Promise<void>;
  getToolCall(runId: string, callId: string): Promise<ToolCallRecord | undefined>;
  listToolCalls(runId: string): Promise<ToolCallRecord[]>;
  getStep(runId: string, key: string): Promise<StepRecord | undefined>;
  getCheckpoint(runId: string): Promise<CheckpointRecord | undefined>;
  /**
   * Take the run's lease with a new, higher fencing token; null when another
   * owner holds an unexpired lease, or the run is completed or failed.
   */
  acquireRunLease(runId: string, owner: string, ttlMs: number, now?: Date): Promise<TakenRunLease | null>;
  /**
   * Extend the lease `fence` names, keeping its token; null when the run's lease
   * has another owner or token (taken over, or released), or the run is completed
   * or failed. Never takes a lease that is not held.
   */
  renewRunLease(runId: string, fence: RunFence, ttlMs: number, now?: Date): Promise<RunLease | null>;
  /**
   * Drop the lease if `owner` holds it (and, with `token`, holds it with that
   * token). With `options.observedSeq`, also do what `markObserved` does, in the
   * same write: the runtime sends where observers are when a drive ends.
   * It need not be durable when it resolves (a store may let it join its next
   * flush): lost in a crash, the lease still expires on its own and observers in
   * another process see the last batch again. Later calls must see it, and a
   * later write that is durable must make it durable too.
   */
  releaseRunLease(runId: string, owner: string, token?: number, options?: ReleaseOptions): Promise<void>;
  /**
   * Lease (each with a new token) up to `limit` runs in `queued`/`running` whose lease is absent or
   * expired; with `agentId`, only runs of that agent and its subagents.
   */
  claimRecoverableRuns(options: ClaimOptions): Promise<ClaimedRunRecord[]>;
  listDeliveries(runId: string): Promise<DeliveryRecord[]>;
  /**
   * Lease up to `limit` pending deliveries that are available now, counting an attempt on each
   * (`attempts` + 1, in the same atomic write as the lease); with `agentId`, only those of runs
   * of that agent and its subagents.
   */
  claimDeliveries(options: ClaimOptions): Promise<DeliveryRecord[]>;
  /** Mark it delivered and release its lease (the attempt was counted by its claim). */
  completeDelivery(deliveryId: string, owner: string): Promise<void>;
  /**
   * Record the attempt's error (counted by its claim); `retryAt` makes it pending again, otherwise it
   * is failed for good. With `options.countAttempt: false`, the claim's attempt is given back.
   */
  failDelivery(deliveryId: string, owner: string, error: string, retryAt?: Date, options?: FailDeliveryOptions): Promise<void>;
}
