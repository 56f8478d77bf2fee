import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { deliveryRetryAfterMs, isFinalDeliveryFailure, isRunOfAgent, storableText, type ChannelModule, type DeliveryRecord, type JsonValue, type RunRecord, type RunStore, type RuntimeLogger } from "@assemblyline-agents/core";

export interface OutboxOptions {
  /** How often pending deliveries are looked for when nothing wakes the worker. Default 500 ms. */
  pollIntervalMs?: number;
  /** Attempts before a delivery is failed for good. Default 8. */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt (with jitter) up to maxDelayMs. Default 1 000 ms. */
  baseDelayMs?: number;
  /** The longest wait between attempts, a channel's retryDeliveryAfter included. Default 300 000 ms. */
  maxDelayMs?: number;
  /** A deliver() call slower than this counts as failed. Default 20 000 ms. */
  deliverTimeoutMs?: number;
  /** Deliveries claimed (and sent in parallel) per round. Default 8. */
  batchSize?: number;
}

/** The build-specific parts of an outbox: which build this host runs. Not a user option (the host sets it). */
export interface DeliveryOutboxOptions extends OutboxOptions {
  /**
   * This host's build (`manifest.agentRevision`). A delivery of a run this build took in, for a channel it lacks
   * (or that cannot send it here), is this build's to settle; left out, every run counts as another build's.
   */
  agentRevision?: string;
}

const MIN_CLAIM_INTERVAL_MS = 25;

/**
 * How long a delivery for a channel this build lacks (or cannot send it through) waits for a build that has it,
 * from its creation: a rolling deploy or a canary ends well within it, and after it no host of such a build is
 * taken to be coming back, so the reply is failed for good rather than kept pending forever.
 */
export const OTHER_BUILD_GRACE_MS = 60 * 60_000;

/** How a hand-back to another build's hosts ends its stored error: the outbox knows its own hand-backs by it. */
const LEFT_FOR_OTHER_BUILD = "; left for a build that has it";

/** What a delivery's payload holds (written by the kernel with run.completed). */
interface DeliveryPayload {
  runId: string;
  text?: string;
  /** "failed": the run failed, and its channel is told with deliverFailure(); absent: a reply. */
  outcome?: "failed";
  code?: string | null;
}

/**
 * The delivery outbox worker. A run that came from a channel enqueues its reply
 * atomically with `run.completed`; this worker leases pending deliveries, calls
 * the channel's `deliver`, and completes them, or schedules a retry with
 * exponential backoff (later when the channel says when: retryDeliveryAfter).
 * A retry is the delivery's `availableAt`, not a held lease, so any worker may
 * take it then, however long the wait. The lease outlives the deliver timeout
 * by a margin, so no other worker can claim a delivery while this one may still
 * be sending it, and a completed delivery is never claimed again.
 *
 * It claims only the replies of its agent's runs (and its subagents'): in a store
 * several agents share, another agent's reply is that agent's host's to send,
 * through its own channel of that name.
 *
 * Builds of one agent share the store during a rolling deploy, and a delivery
 * names a channel, not a build: a reply for a channel this build lacks, or whose
 * module here cannot send it, may be another build's to send. It is handed back
 * for later (a retry time, so a host of that build can claim it), giving back the
 * attempt its claim counted, and failed for good only when the run came in
 * through this very build, or once OTHER_BUILD_GRACE_MS passed with no build
 * sending it.
 */
export class DeliveryOutbox {
  readonly owner = `outbox:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly pollIntervalMs: number;
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly deliverTimeoutMs: number;
  private readonly batchSize: number;
  private loop: Promise<void> | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  private kicked = false;
  private warnedForeign = false;
  private readonly agentRevision: string | undefined;

  constructor(
    private readonly runs: RunStore,
    /** The host's agent: only its runs' replies are claimed. */
    private readonly agentId: string,
    private readonly channels: Record<string, ChannelModule>,
    private readonly logger: RuntimeLogger,
    options: DeliveryOutboxOptions = {},
  ) {
    this.agentRevision = options.agentRevision;
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    this.maxAttempts = options.maxAttempts ?? 8;
    this.baseDelayMs = options.baseDelayMs ?? 1_000;
    this.maxDelayMs = options.maxDelayMs ?? 300_000;
    this.deliverTimeoutMs = options.deliverTimeoutMs ?? 20_000;
    this.batchSize = options.batchSize ?? 8;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Look for deliveries now (a run just completed). */
  kick(): void {
    this.kicked = true;
    this.wake?.();
  }

  /** Finish the deliveries in flight and stop. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let claimed: DeliveryRecord[] = [];
      this.kicked = false;
      const started = Date.now();
      try {
        claimed = await this.runs.claimDeliveries({ owner: this.owner, ttlMs: this.deliverTimeoutMs * 2 + 10_000, limit: this.batchSize, agentId: this.agentId });
      } catch (error) {
        this.logger.warn({ event: "outbox.claim_failed", err: String(error) }, "claiming deliveries failed; retrying after the poll interval");
      }
      // Settled, not all: every send of the batch is awaited before the next round (or stop()) goes on.
      await Promise.allSettled(claimed.map((delivery) => this.deliver(delivery)));
      if (this.stopped || claimed.length === this.batchSize) continue;
      if (!this.kicked) await this.sleep(this.pollIntervalMs, true);
      // A kick (a run completed) ends the wait, but claims stay at most one per
      // MIN_CLAIM_INTERVAL_MS: each is a write, and completions come in bursts, so the
      // deliveries of a burst share a claim rather than taking one each.
      if (this.kicked && !this.stopped) await this.sleep(Math.max(0, MIN_CLAIM_INTERVAL_MS - (Date.now() - started)), false);
    }
  }

  /** Wait `ms`; stop() always cuts it short, a kick only when `wakeOnKick`. */
  private sleep(ms: number, wakeOnKick: boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.wake = () => {
        if (wakeOnKick || this.stopped) done();
      };
    });
  }

  /** One delivery, never rejecting: a state write that failed is logged, and the delivery is claimed again once its lease runs out. */
  private async deliver(delivery: DeliveryRecord): Promise<void> {
    // The store counted this attempt when it was claimed.
    const fields = { deliveryId: delivery.id, runId: delivery.runId, channel: delivery.channel, attempt: delivery.attempts };
    try {
      await this.attempt(delivery, fields);
    } catch (error) {
      this.logger.warn(
        { event: "outbox.record_failed", ...fields, err: String(error) },
        "recording a delivery's outcome in the state store failed; it is claimed again when its lease runs out",
      );
    }
  }

  private async attempt(delivery: DeliveryRecord, fields: Record<string, unknown>): Promise<void> {
    const module = this.channels[delivery.channel];
    const payload = delivery.payload as unknown as DeliveryPayload;
    let run: RunRecord | undefined;
    try {
      run = await this.runs.getRun(delivery.runId);
    } catch (error) {
      await this.failed(delivery, fields, error);
      return;
    }
    if (run && !isRunOfAgent(run, this.agentId)) {
      this.leaveForeign(delivery, run);
      return;
    }
    // Out of attempts is judged only where this host would send it or hand it on: a host that cannot
    // send it says why (its channel reason), and its hand-backs are judged by the other-build grace.
    const failure = payload.outcome === "failed";
    if (!module) {
      if (this.isOtherBuilds(delivery, run)) {
        if (await this.endIfOutOfAttempts(delivery, fields)) return;
        await this.leaveForOtherBuild(delivery, fields, `this build has no channel ${delivery.channel}`);
        return;
      }
      // The channel is gone from the build the run came in through (or from every build by now): retrying cannot help.
      await this.runs.failDelivery(delivery.id, this.owner, `this agent has no channel ${delivery.channel}`);
      this.logger.warn({ event: "delivery.failed", ...fields, final: true, err: `no channel ${delivery.channel}` }, "delivery names a channel this agent does not have");
      return;
    }
    if (failure ? !module.deliverFailure : !module.deliver) {
      // Written by a build whose module of that name sends it: that build's to send, not this one's to drop.
      if (this.isOtherBuilds(delivery, run)) {
        if (await this.endIfOutOfAttempts(delivery, fields)) return;
        await this.leaveForOtherBuild(delivery, fields, `channel ${delivery.channel} has no ${failure ? "deliverFailure" : "deliver"}() in this build`);
        return;
      }
      // A raw route has no provider to push to: the reply is served by GET /runs/:id.
      await this.runs.completeDelivery(delivery.id, this.owner);
      this.logger.debug({ event: "delivery.skipped", ...fields }, "channel has no deliver(); the reply is read through /runs");
      return;
    }
    if (await this.endIfOutOfAttempts(delivery, fields)) return;
    const abort = new AbortController();
    try {
      const metadata = run?.input.channel?.metadata;
      const deliveryMetadata = run?.input.channel?.delivery;
      const attempt = {
        deliveryId: delivery.id,
        attempt: delivery.attempts,
        signal: abort.signal,
        conversationId: delivery.conversationId,
        runId: payload.runId ?? delivery.runId,
        ...(metadata ? { metadata } : {}),
        ...(deliveryMetadata ? { deliveryMetadata } : {}),
      };
      await withTimeout(
        failure
          ? module.deliverFailure!({ ...attempt, code: typeof payload.code === "string" ? payload.code : null })
          : module.deliver!({ ...attempt, text: typeof payload.text === "string" ? payload.text : "" }),
        this.deliverTimeoutMs,
        abort,
      );
    } catch (error) {
      await this.failed(delivery, fields, error);
      return;
    }
    await this.runs.completeDelivery(delivery.id, this.owner);
    this.logger.info({ event: "delivery.completed", ...fields }, "reply delivered");
  }

  /** Count the attempt: retried with backoff (or after the wait the channel asks for), or failed for good after the last one or when the channel says so. */
  private async failed(delivery: DeliveryRecord, fields: Record<string, unknown>, error: unknown): Promise<void> {
    // Stored as the delivery's last error: text every store can hold.
    const message = storableText(error instanceof Error ? error.message : String(error));
    if (delivery.attempts >= this.maxAttempts || isFinalDeliveryFailure(error)) {
      await this.runs.failDelivery(delivery.id, this.owner, message);
      this.logger.error(
        { event: "delivery.failed", ...fields, err: message, final: true },
        isFinalDeliveryFailure(error) ? "delivery failed for good: the channel says trying again cannot help" : "delivery failed for good after its last attempt",
      );
    } else {
      const backoffMs = this.backoff(delivery.attempts);
      // The provider's word on when to come back, if the channel passed it on: never sooner than the backoff (a
      // provider saying "now" during an outage is no reason to hammer it), never past maxDelayMs (a provider
      // asking for an hour must not leave a reply parked that long; the attempt limit still ends a loop of waits).
      const askedMs = deliveryRetryAfterMs(error);
      const delayMs = askedMs === undefined ? backoffMs : Math.max(backoffMs, Math.min(Math.ceil(askedMs), this.maxDelayMs));
      await this.runs.failDelivery(delivery.id, this.owner, message, new Date(Date.now() + delayMs));
      this.logger.warn(
        { event: "delivery.failed", ...fields, err: message, retryInMs: delayMs, ...(askedMs === undefined ? {} : { retryAfterMs: askedMs }) },
        askedMs === undefined ? "delivery failed; retrying with backoff" : "delivery failed; retrying when the channel asked",
      );
    }
  }

  /**
   * Fail a delivery past its last attempt for good, before it is sent or handed on. Sending it again
   * could kill this host as it killed the last one (a reply too big for memory, a channel that crashes
   * the process), and a hand-back would let the build that can send it try again: every replica would
   * crash-loop on it, so it ends here.
   */
  private async endIfOutOfAttempts(delivery: DeliveryRecord, fields: Record<string, unknown>): Promise<boolean> {
    if (!this.isOutOfAttempts(delivery)) return false;
    const handedBack = delivery.lastError?.endsWith(LEFT_FOR_OTHER_BUILD) === true;
    // A sender that stops mid-send records nothing: after a hand-back, the stored error cannot tell whether one did.
    const message = handedBack
      ? `failed for good after ${delivery.attempts - 1} attempts: the last one recorded was left for another build (${delivery.lastError}), no attempt is left, and the grace period for a build that can send it is over (a sender that stopped mid-send since records nothing)`
      : `failed for good after ${delivery.attempts - 1} attempts: the sender of the last one stopped without recording an outcome (its process died or lost the state store while sending), and no attempt is left`;
    await this.runs.failDelivery(delivery.id, this.owner, message);
    this.logger.error(
      { event: "delivery.failed", ...fields, err: message, final: true },
      handedBack ? "delivery failed for good: out of attempts and other-build grace" : "delivery failed for good: its last attempt's sender stopped mid-send",
    );
    return true;
  }

  /**
   * Whether a claimed delivery is past its last attempt (the claim counted this one): the sender of the
   * last allowed attempt stopped without recording an outcome, since a recorded failure of it is final.
   * A hand-back gives its attempt back, but a store built before failDelivery's countAttempt keeps it
   * counted: so after a hand-back, being past maxAttempts is bounded by OTHER_BUILD_GRACE_MS instead, and
   * the build that can send it still gets its one last try there; a sender dying on that try repeats only
   * until the grace period ends.
   */
  private isOutOfAttempts(delivery: DeliveryRecord): boolean {
    if (delivery.attempts <= this.maxAttempts) return false;
    const handedBack = delivery.lastError?.endsWith(LEFT_FOR_OTHER_BUILD) === true;
    return !(handedBack && Date.now() - Date.parse(delivery.createdAt) < OTHER_BUILD_GRACE_MS);
  }

  /**
   * Whether a delivery this build cannot send may be another build's to send: its run came in through
   * another build (or this host does not know its own), and it is younger than OTHER_BUILD_GRACE_MS.
   */
  private isOtherBuilds(delivery: DeliveryRecord, run: RunRecord | undefined): boolean {
    if (run !== undefined && this.agentRevision !== undefined && run.agentRevision === this.agentRevision) return false;
    return Date.now() - Date.parse(delivery.createdAt) < OTHER_BUILD_GRACE_MS;
  }

  /**
   * Hand a delivery back with a retry time, so a host of the build that can send it claims it. Nothing
   * was sent, so the claim's attempt is given back: hand-backs through a long rolling deploy must not use
   * up the attempts of the build that sends it. With no attempt counted, the backoff would stay at its first
   * step, so the wait grows with the delivery's age instead (up to a quarter of it, within baseDelayMs..maxDelayMs): prompt while a
   * deploy is quick, a few dozen hand-backs over the whole grace period when no such build comes.
   */
  private async leaveForOtherBuild(delivery: DeliveryRecord, fields: Record<string, unknown>, reason: string): Promise<void> {
    const ageMs = Math.max(0, Date.now() - Date.parse(delivery.createdAt));
    const delayMs = jittered(Math.min(this.maxDelayMs, Math.max(this.baseDelayMs, ageMs / 4)));
    await this.runs.failDelivery(delivery.id, this.owner, `${reason}${LEFT_FOR_OTHER_BUILD}`, new Date(Date.now() + delayMs), { countAttempt: false });
    this.logger.info({ event: "delivery.other_build", ...fields, err: reason, retryInMs: delayMs }, "delivery left for a host of another build that can send it");
  }

  /**
   * Another agent's reply, handed over by a store that ignores claimDeliveries' agentId (one built
   * before it): neither sent nor failed, it is left to that agent's host once this lease runs out.
   */
  private leaveForeign(delivery: DeliveryRecord, run: RunRecord): void {
    if (this.warnedForeign) return;
    this.warnedForeign = true;
    this.logger.warn(
      { event: "state.claim_filter_ignored", deliveryId: delivery.id, runId: run.id, agentId: run.agentId },
      "the state store handed over another agent's reply: it ignores claimDeliveries' agentId, so replies wait for leases to run out; upgrade the state adapter",
    );
  }

  /** Exponential with full jitter on the upper half, so a provider outage is not hammered in lockstep. */
  private backoff(attempt: number): number {
    return jittered(Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1)));
  }
}

/** A wait between half of `ceilingMs` and all of it, so replicas do not come back in lockstep. */
function jittered(ceilingMs: number): number {
  return Math.round(ceilingMs / 2 + Math.random() * (ceilingMs / 2));
}

/** `work`, or a failure after `ms`, when `abort` tells the channel to stop sending. */
async function withTimeout(work: Promise<void>, ms: number, abort: AbortController): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const timedOut = new Error(`deliver() did not settle within ${ms} ms`);
          abort.abort(timedOut);
          reject(timedOut);
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
