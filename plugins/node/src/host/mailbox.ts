import { isAssemblyLineError, type RuntimeLogger } from "@assemblyline-agents/core";
import type { OpenEveRuntime } from "@assemblyline-agents/runtime";

interface Letter {
  runId: string;
  /** Runs of one conversation execute one after another; a run without one is its own. */
  conversation: string;
  /** Whether beforeStart has work to do (a turn with attachments, or a run we know nothing about). */
  prepare: boolean;
  /** Starts of it that failed in a row, for the backoff before the next. */
  failedStarts?: number;
}

/** The wait before retrying a start that failed: from the first up to the cap, doubling per failure. */
const START_RETRY_FIRST_MS = 100;
const START_RETRY_MAX_MS = 10_000;
/** Lower for a turn behind another replica's run of its conversation: it is only waiting for that run to end. */
const BUSY_RETRY_MAX_MS = 2_000;

export interface MailboxOptions {
  runtime: OpenEveRuntime;
  maxConcurrentRuns: number;
  maxQueuedRuns: number;
  logger: RuntimeLogger;
  /** Work to do before a run starts (attachment downloads); its failure is logged, not fatal. */
  beforeStart?(runId: string): Promise<void>;
}

/** Why an event was not accepted, and when to try again. */
export interface MailboxRefusal {
  active: number;
  waiting: number;
  retryAfterMs: number;
}

/** Room for one event: it starts as soon as it is enqueued (`startsNow`), or waits its turn. */
export interface MailboxReservation {
  startsNow: boolean;
  release(): void;
}

/**
 * The durable per-conversation mailbox. An accepted event is a `queued` run in
 * the state store (runtime.submit) before the request is answered; this class
 * is the in-process view of those runs, starting each through admission
 * (runtime.start) when capacity allows, one run per conversation at a time, in
 * the order they were stored (runtime.start refuses a turn while an earlier one of its
 * conversation is queued or running). Everything it holds is also in the state store, so a
 * restart loses nothing: the next boot adopts queued runs again.
 */
export class ConversationMailbox {
  private readonly waiting: Letter[] = [];
  private readonly known = new Set<string>();
  private readonly busy = new Set<string>();
  private executing = 0;
  /** Admissions granted whose run is not yet enqueued (the submit is in flight), by where they go. */
  private reservedStart = 0;
  private reservedWait = 0;
  /**
   * The conversations holding a reservation that starts now: only one turn of a conversation can
   * start, so another arriving before its run is enqueued waits, and is counted as waiting.
   */
  private readonly startingConversations = new Set<string>();
  private stopped = false;
  private recentRunMs = 1000;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Letters whose start failed, waiting out their backoff; their conversations stay busy meanwhile. */
  private readonly backingOff = new Map<string, NodeJS.Timeout>();

  constructor(private readonly options: MailboxOptions) {}

  get load(): { executing: number; waiting: number } {
    return { executing: this.executing, waiting: this.waiting.length + this.backingOff.size + this.reservedWait };
  }

  /**
   * Reserve room for one brand-new event, or refuse it: it may start now, or
   * wait while fewer than maxQueuedRuns wait. Call `release` once it is
   * enqueued, or dropped.
   */
  reserve(conversationId: string | null): MailboxReservation | MailboxRefusal {
    const conversation = conversationId === null ? undefined : `c:${conversationId}`;
    // Waiting letters are all blocked by busy conversations whenever capacity is free
    // (pump runs on every change), so only this event's own conversation can hold it back:
    // a run of it executing or waiting, or another of its turns already reserved to start.
    const startsNow =
      this.executing + this.reservedStart < this.options.maxConcurrentRuns &&
      this.options.runtime.hasRunCapacity() &&
      (conversation === undefined ||
        (!this.busy.has(conversation) && !this.startingConversations.has(conversation) && !this.waiting.some((letter) => letter.conversation === conversation)));
    const waiting = this.waiting.length + this.backingOff.size + this.reservedWait;
    if (!startsNow && waiting >= this.options.maxQueuedRuns) {
      // Each slot turns over about once per recent run time.
      // From the queue ahead and the observed run time, with +-25 % jitter so refused clients do not return in a herd.
      const retryAfterMs = Math.max(100, Math.round(((this.recentRunMs * (waiting + 1)) / this.options.maxConcurrentRuns) * (0.75 + Math.random() / 2)));
      // The runtime counts every run it executes, those started beside the mailbox (runtime.run()) too.
      const runtime = this.options.runtime.runLoad();
      return { active: Math.max(this.executing, runtime.executing), waiting: waiting + runtime.waiting, retryAfterMs };
    }
    const starting = startsNow ? conversation : undefined;
    if (startsNow) this.reservedStart += 1;
    else this.reservedWait += 1;
    if (starting !== undefined) this.startingConversations.add(starting);
    let released = false;
    return {
      startsNow,
      release: () => {
        if (released) return;
        released = true;
        if (startsNow) this.reservedStart -= 1;
        else this.reservedWait -= 1;
        if (starting !== undefined) this.startingConversations.delete(starting);
      },
    };
  }

  /** Add a durably queued run (idempotent by run id) and start what can start. */
  enqueue(runId: string, conversationId: string | null, options: { prepare?: boolean } = {}): void {
    if (this.known.has(runId)) return;
    this.known.add(runId);
    this.waiting.push({ runId, conversation: conversationId === null ? `r:${runId}` : `c:${conversationId}`, prepare: options.prepare !== false });
    this.pump();
  }

  /**
   * Count a run this process already drives (runtime.submitAndStart, on a
   * reservation that starts now, for a turn with no conversation) as executing
   * until its drive settles, as if the mailbox had started it.
   */
  adopt(runId: string, drive: Promise<unknown>): void {
    const letter: Letter = { runId, conversation: `r:${runId}`, prepare: false };
    this.known.add(runId);
    this.executing += 1;
    this.busy.add(letter.conversation);
    const started = Date.now();
    drive.then(
      () => this.settle(letter, started, "done"),
      (error: unknown) => {
        this.options.logger.warn({ event: "mailbox.start_failed", runId, err: String(error) }, "driving a run failed; the recovery sweep retries it while it stays queued");
        this.settle(letter, started, "drop");
      },
    );
  }

  has(runId: string): boolean {
    return this.known.has(runId);
  }

  /** Stop starting runs (shutdown); those still waiting stay queued in the state store. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    for (const timer of this.backingOff.values()) clearTimeout(timer);
    this.backingOff.clear();
  }

  private hasCapacity(): boolean {
    return this.executing < this.options.maxConcurrentRuns && this.options.runtime.hasRunCapacity();
  }

  private pump(): void {
    if (this.stopped) return;
    while (this.hasCapacity()) {
      const index = this.waiting.findIndex((letter) => !this.busy.has(letter.conversation));
      if (index === -1) return;
      const [letter] = this.waiting.splice(index, 1);
      this.execute(letter!);
    }
    // Capacity is also taken by direct runtime.run() callers, who do not wake us.
    if (this.waiting.length > 0 && !this.retryTimer) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        this.pump();
      }, 100);
      this.retryTimer.unref();
    }
  }

  private execute(letter: Letter): void {
    this.executing += 1;
    this.busy.add(letter.conversation);
    const started = Date.now();
    const { runtime, logger } = this.options;
    const work = (async () => {
      if (letter.prepare && this.options.beforeStart) {
        await this.options.beforeStart(letter.runId).catch((error) =>
          logger.warn({ event: "mailbox.before_start_failed", runId: letter.runId, err: String(error) }, "preparing a run failed; starting it anyway"),
        );
      }
      await runtime.start(letter.runId);
    })();
    work.then(
      () => this.settle(letter, started, "done"),
      (error: unknown) => {
        if (isAssemblyLineError(error, "AL_ERR_RUN_CAPACITY")) {
          // Someone else took the slot between our check and start: wait again, first in line.
          this.settle(letter, started, "retry");
          return;
        }
        // Never startable by this host, so waiting for it would hold the conversation for good: the run left
        // `queued` (another replica took it), it is gone, or its build is one this host lacks (a replica that has
        // it starts it; the sweep offers it here again). The conversation's next turn may go.
        if ((["AL_ERR_RUN_NOT_RESUMABLE", "AL_ERR_RUN_NOT_FOUND", "AL_ERR_CONTINUATION_VERSION"] as const).some((code) => isAssemblyLineError(error, code))) {
          logger.debug({ event: "mailbox.run_taken", runId: letter.runId, err: String(error) }, "this host cannot start this run: another replica is executing it, it is gone, or its build is not here");
          this.settle(letter, started, "drop");
          return;
        }
        if (isAssemblyLineError(error, "AL_ERR_CONVERSATION_BUSY")) {
          // Turns that arrive together are stored in one order and may reach the mailbox in another: an earlier
          // turn waiting here goes first (it would wait behind this one for good otherwise).
          const older = new Set(stringsIn(error.details?.olderRunIds));
          const lastOlderHere = this.waiting.findLastIndex((waiting) => waiting.conversation === letter.conversation && older.has(waiting.runId));
          if (lastOlderHere !== -1) {
            logger.debug({ event: "mailbox.conversation_busy", runId: letter.runId }, "an earlier turn of the conversation waits here; it goes first");
            this.settle(letter, started, "yield", { behind: lastOlderHere });
            return;
          }
          // One queued or running on another replica: this one keeps its place, first of its conversation, and
          // is tried again after a growing wait.
          logger.debug({ event: "mailbox.conversation_busy", runId: letter.runId }, "an earlier turn of the conversation has not ended; waiting for it");
          this.settle(letter, started, "backoff", { retryMaxMs: BUSY_RETRY_MAX_MS });
          return;
        }
        // Anything else (the state store unreachable, its build failing to load) may pass: the run stays first
        // of its conversation and is tried again after a growing wait, so no later turn overtakes it.
        logger.warn({ event: "mailbox.start_failed", runId: letter.runId, err: String(error) }, "starting a queued run failed; retrying it before the conversation's next turn");
        this.settle(letter, started, "backoff");
      },
    );
  }

  /**
   * `retry` puts the letter back first in line, `yield` right behind the waiting letter at `behind` (an earlier
   * turn of its conversation), `backoff` back first after a growing wait of at most `retryMaxMs`.
   */
  private settle(
    letter: Letter,
    started: number,
    outcome: "done" | "retry" | "yield" | "backoff" | "drop",
    { behind = -1, retryMaxMs = START_RETRY_MAX_MS }: { behind?: number; retryMaxMs?: number } = {},
  ): void {
    this.executing -= 1;
    if (outcome === "yield") {
      this.busy.delete(letter.conversation);
      this.waiting.splice(behind + 1, 0, letter);
      this.pump();
      return;
    }
    if (outcome === "backoff") {
      // The conversation stays busy until the letter is back in line, so its later turns keep waiting.
      letter.failedStarts = (letter.failedStarts ?? 0) + 1;
      const ceilingMs = Math.min(retryMaxMs, START_RETRY_FIRST_MS * 2 ** (letter.failedStarts - 1));
      // Jitter on the upper half, so replicas that failed together do not retry in lockstep.
      const timer = setTimeout(() => {
        this.backingOff.delete(letter.runId);
        this.busy.delete(letter.conversation);
        this.waiting.unshift(letter);
        this.pump();
      }, Math.round(ceilingMs / 2 + Math.random() * (ceilingMs / 2)));
      timer.unref();
      this.backingOff.set(letter.runId, timer);
      this.pump();
      return;
    }
    this.busy.delete(letter.conversation);
    if (outcome === "retry") this.waiting.unshift(letter);
    else {
      this.known.delete(letter.runId);
      // A moving average of run time is the honest Retry-After hint.
      this.recentRunMs = this.recentRunMs * 0.8 + (Date.now() - started) * 0.2;
    }
    this.pump();
  }
}

/** The strings of a details field that should be a list of them (anything else reads as none). */
function stringsIn(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}
