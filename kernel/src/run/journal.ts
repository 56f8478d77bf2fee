import type { AppendOptions, JsonValue, NewRunEvent, RunEvent, RunFence, RunRecord, RunStateChange, RunStore, RuntimeLogger } from "@assemblyline-agents/core";
import { onlySyncTaps, reachesAnyone, withObserverFailureSink, type EventContext, type KernelHooks } from "../hooks.js";
import { OwnWrites } from "./own-writes.js";

/**
 * Appends a run's events with their state changes, then lets observers
 * (`hooks.event`: hooks/ files, telemetry, hosts) see each one once, in order,
 * only after it is committed.
 *
 * The events an append returns are handed to observers directly; the store is
 * read back only to catch up (a run this process has not observed yet, or events
 * appended by a failing observer). While this process drives a run, where its
 * observers are is written with the run's next append (`observedSeq`), not as a
 * write of its own; when the drive ends, with the lease's release (`forget`
 * hands it over); for a run it does not drive, with `markObserved`. A crash
 * re-delivers at most the batch observed since the last write, as it would
 * between an observer and a separate `markObserved`.
 */
export class RunJournal {
  /**
   * What this process knows of each run it drives or observes, in one record per run whose
   * fields a run's appends change. Not a map per field: entries set and deleted on every
   * append made each map reallocate its table, and a dropped table kept what it pointed at
   * alive through young collections until the next full one (docs/performance.md,
   * "Objects that live for a run").
   */
  private readonly known = new Map<string, JournalRun>();

  private readonly eventContext: EventContext;

  constructor(
    private readonly runs: RunStore,
    private readonly hooks: KernelHooks,
    eventContext: EventContext,
    private readonly logger: RuntimeLogger,
  ) {
    this.eventContext = withObserverFailureSink(eventContext, (error, event) =>
      this.logger.error({ runId: event.runId, seq: event.seq, err: error.message }, "event observer failed"),
    );
  }

  /** How many runs this journal keeps a record of: none once every run it drove or observed here rests. */
  get runsKnown(): number {
    return this.known.size;
  }

  /** The run's record here, made on first use. */
  private entry(runId: string): JournalRun {
    let run = this.known.get(runId);
    if (!run) {
      run = { dispatching: undefined, observedSeq: undefined, unwrittenSeq: undefined, ownWrites: undefined, appendedByObservers: false, fence: undefined, held: undefined };
      this.known.set(runId, run);
    }
    return run;
  }

  /** Forget the run's record once nothing is left in it: a resting run holds no memory in this process. */
  private dropIfEmpty(runId: string, run: JournalRun): void {
    const empty =
      run.dispatching === undefined &&
      run.observedSeq === undefined &&
      run.unwrittenSeq === undefined &&
      run.ownWrites === undefined &&
      !run.appendedByObservers &&
      run.fence === undefined &&
      run.held === undefined &&
      run.unwrittenHeld === undefined;
    if (empty && this.known.get(runId) === run) this.known.delete(runId);
  }

  /**
   * The run was queued when this drive took its lease: from now until `forget`,
   * `ownWritesOf` answers for its steps, tool calls and checkpoint.
   */
  trackOwnWrites(run: RunRecord): void {
    this.entry(run.id).ownWrites = new OwnWrites(run);
  }

  /** What this drive of a fresh run has written; undefined when the store must be asked. */
  ownWritesOf(runId: string): OwnWrites | undefined {
    return this.known.get(runId)?.ownWrites;
  }

  /** Fence this run's writes with `fence` (the lease it is driven under), or stop fencing them (undefined). */
  holdFence(runId: string, fence: RunFence | undefined): void {
    if (fence) {
      this.entry(runId).fence = { owner: fence.owner, token: fence.token };
      return;
    }
    const run = this.known.get(runId);
    if (!run) return;
    run.fence = undefined;
    this.dropIfEmpty(runId, run);
  }

  async append(runId: string, events: NewRunEvent[], change?: RunStateChange, options?: { expectedLastSeq?: number }): Promise<RunEvent[]> {
    const own = events.map(withJsonData);
    const run = this.known.get(runId);
    const held = run?.held;
    if (run && held) {
      run.held = undefined;
      this.dropIfEmpty(runId, run);
    }
    const merged = held ? mergeChanges(held.change, change) : change;
    if (!run || !held) return this.commit(runId, own, merged as RunStateChange | undefined, options);
    try {
      if (merged === CONFLICT) {
        // Two changes to one record cannot share an append: the held one goes first, and the log moved by its events.
        await this.commit(runId, held.events, held.change, options);
      } else {
        return (await this.commit(runId, [...held.events, ...own], merged, options)).slice(held.events.length);
      }
    } catch (error) {
      // Kept for `heldEvents` only (what a lost lease abandoned), never written again.
      run.unwrittenHeld = held.events;
      throw error;
    }
    const shifted = options?.expectedLastSeq === undefined ? options : { ...options, expectedLastSeq: options.expectedLastSeq + held.events.length };
    return this.commit(runId, own, change, shifted);
  }

  /**
   * The events held for the run's next append (see `hold`), and those whose
   * append failed, as copies: what a drive that lost its lease leaves unwritten.
   */
  heldEvents(runId: string): NewRunEvent[] {
    const run = this.known.get(runId);
    return structuredClone([...(run?.unwrittenHeld ?? []), ...(run?.held?.events ?? [])]);
  }

  /**
   * Hold events and their change for the run's next append, which commits them in
   * the same write as its own. Only for what nothing outside this process acts on
   * before that append: the run's start and a model call's result, whose tool calls
   * are appended before they execute. A crash before that append loses the held
   * work and the next drive does it again; nothing ever proceeds on it before it is
   * durable. A drive that ends without another append (lease lost, store down)
   * drops it (`forget`).
   */
  async hold(runId: string, events: NewRunEvent[], change?: RunStateChange): Promise<void> {
    const own = events.map(withJsonData);
    const run = this.entry(runId);
    const held = run.held;
    if (!held) {
      run.held = { events: own, change };
      return;
    }
    const merged = mergeChanges(held.change, change);
    if (merged === CONFLICT) {
      await this.append(runId, []);
      this.entry(runId).held = { events: own, change };
      return;
    }
    run.held = { events: [...held.events, ...own], change: merged };
  }

  private async commit(runId: string, events: NewRunEvent[], change: RunStateChange | undefined, options: { expectedLastSeq?: number } | undefined): Promise<RunEvent[]> {
    const recorded = await this.write(runId, events, change, options);
    if (this.known.get(runId)?.dispatching === undefined && this.deliverAtOnce(runId, recorded)) return recorded;
    await this.chain(runId, () => this.deliver(runId, recorded));
    return recorded;
  }

  /**
   * What `deliver` does, done at once, for a run driven here with no delivery in flight
   * and the batch next in seq, when every observer is a synchronous tap (or there is
   * none): call them for each event in order, then move the position. A run's every
   * append takes this path then, without the chain's promises and one per event
   * (the host's own observers are such taps). False when the full delivery is needed:
   * an async observer, an unknown position, events observers appended.
   */
  private deliverAtOnce(runId: string, recorded: RunEvent[]): boolean {
    const run = this.known.get(runId);
    if (run?.fence === undefined || run.appendedByObservers || recorded.length === 0) return false;
    const seen = run.observedSeq;
    if (seen === undefined || recorded[0]!.seq !== seen + 1) return false;
    const observers = this.hooks.event;
    if (reachesAnyone(observers)) {
      if (!onlySyncTaps(observers)) return false;
      for (const event of recorded) {
        // Synchronous taps: the callback has run, with the first tap's error if any, before callAsync returns.
        observers.callAsync(event, this.eventContext, (error) => {
          if (error) this.logger.error({ runId, seq: event.seq, err: String(error) }, "event observer failed");
        });
      }
    }
    const last = recorded[recorded.length - 1]!.seq;
    // Read again: a tap may have reached this journal.
    const after = this.entry(runId);
    after.observedSeq = last;
    after.unwrittenSeq = last;
    return true;
  }

  /** appendEvents with the fence, carrying the observers' position if it is not written yet. */
  private async write(runId: string, events: NewRunEvent[], change: RunStateChange | undefined, options: { expectedLastSeq?: number } | undefined): Promise<RunEvent[]> {
    const run = this.known.get(runId);
    const observedSeq = run?.unwrittenSeq;
    const fence = run?.fence;
    const appendOptions: AppendOptions = {};
    if (options?.expectedLastSeq !== undefined) appendOptions.expectedLastSeq = options.expectedLastSeq;
    if (fence) appendOptions.fence = fence;
    if (observedSeq !== undefined) appendOptions.observedSeq = observedSeq;
    const recorded = await this.runs.appendEvents(runId, events, change, appendOptions);
    const after = this.known.get(runId);
    if (after && observedSeq !== undefined && after.unwrittenSeq === observedSeq) {
      after.unwrittenSeq = undefined;
      this.dropIfEmpty(runId, after);
    }
    if (change) after?.ownWrites?.committed(change);
    return recorded;
  }

  async record(
    runId: string,
    type: string,
    data: Record<string, JsonValue | undefined> = {},
    change?: RunStateChange,
    options?: { expectedLastSeq?: number },
  ): Promise<RunEvent> {
    // append drops the undefined values.
    const [event] = await this.append(runId, [{ type, data: data as Record<string, JsonValue> }], change, options);
    return event!;
  }

  /**
   * Deliver every committed event observers have not seen yet (also after a crash
   * or in a new process). `known`: the run's observer position and the events
   * after it, as the caller just wrote them (a run it created): nothing is read.
   */
  observe(runId: string, known?: { observedSeq: number; events: RunEvent[] }): Promise<void> {
    if (known) this.entry(runId).observedSeq = known.observedSeq;
    else {
      // Kept (or not) by the chain below, which reads the position from the store.
      const run = this.known.get(runId);
      if (run) run.observedSeq = undefined;
    }
    if (known && this.known.get(runId)?.dispatching === undefined && this.deliverAtOnce(runId, known.events)) return Promise.resolve();
    return this.chain(runId, () => this.deliver(runId, known?.events ?? []));
  }

  /**
   * Forget the run once its drive ends (finished or paused), after any delivery in
   * flight: a resting run holds no memory in this process, and a later delivery
   * reads its position back from the store. Returns where observers got to if the
   * store does not have it yet: the caller writes it, with the lease's release.
   */
  async forget(runId: string): Promise<number | undefined> {
    const run = this.known.get(runId);
    if (run) {
      run.ownWrites = undefined;
      run.held = undefined;
      run.unwrittenHeld = undefined;
    }
    let unwritten: number | undefined;
    await this.chain(runId, async () => {
      const current = this.entry(runId);
      current.observedSeq = undefined;
      current.appendedByObservers = false;
      unwritten = current.unwrittenSeq;
      current.unwrittenSeq = undefined;
    });
    return unwritten;
  }

  /**
   * Append without waiting for observers: for events observers themselves cause
   * (`hook.failed`), which the running delivery picks up from the store.
   */
  async appendUnobserved(runId: string, events: NewRunEvent[]): Promise<RunEvent[]> {
    const recorded = await this.write(runId, events.map(withJsonData), undefined, undefined);
    this.entry(runId).appendedByObservers = true;
    return recorded;
  }

  private chain(runId: string, work: () => Promise<void>): Promise<void> {
    const run = this.entry(runId);
    const previous = run.dispatching ?? Promise.resolve();
    const next = previous.then(work, work);
    const tracked = next.finally(() => {
      const current = this.known.get(runId);
      if (current?.dispatching !== tracked) return;
      current.dispatching = undefined;
      this.dropIfEmpty(runId, current);
    });
    run.dispatching = tracked;
    return tracked;
  }

  private async deliver(runId: string, recorded: RunEvent[]): Promise<void> {
    let batch = recorded;
    for (;;) {
      const seen = this.known.get(runId)?.observedSeq;
      // Unknown position, nothing in hand, or not the next seq: read what observers missed from the store.
      if (seen === undefined || batch.length === 0 || batch[0]!.seq !== seen + 1) {
        const from = seen ?? (await this.runs.getRun(runId))?.observedSeq;
        if (from === undefined) return;
        batch = await this.runs.listEvents(runId, { afterSeq: from });
        if (batch.length === 0) {
          this.entry(runId).observedSeq = from;
          return;
        }
      }
      this.entry(runId).appendedByObservers = false;
      // Nothing the hook would reach (no tap, no interceptor that sees calls): nothing to call; the position below still moves.
      const observed = reachesAnyone(this.hooks.event) ? batch : [];
      for (const event of observed) {
        try {
          await this.hooks.event.promise(event, this.eventContext);
        } catch (error) {
          // Taps isolate their own failures; reaching here means an observer broke the contract.
          this.logger.error({ runId, seq: event.seq, err: String(error) }, "event observer failed");
        }
      }
      const last = batch.at(-1)!.seq;
      // Our position moves first: if the store write fails, this process still never re-delivers the batch.
      const run = this.entry(runId);
      run.observedSeq = last;
      // Driven here: the position rides on the run's next append (or is written when it rests).
      if (run.fence !== undefined) run.unwrittenSeq = last;
      else await this.runs.markObserved(runId, last);
      // An observer appended (hook.failed) while we delivered: deliver that too.
      if (!this.known.get(runId)?.appendedByObservers) return;
      batch = [];
    }
  }
}

/** What the journal knows of one run; undefined where it knows nothing. */
interface JournalRun {
  /** The observers' delivery chain, so they see events in seq order even when appends race. */
  dispatching: Promise<void> | undefined;
  /** The highest seq observers have seen, once this process has observed the run. */
  observedSeq: number | undefined;
  /** The observers' position not yet written to the store: it rides on the run's next append. */
  unwrittenSeq: number | undefined;
  /** What the drive of a fresh run has written (see OwnWrites). */
  ownWrites: OwnWrites | undefined;
  /** Whether an observer appended to the run while its events were being delivered. */
  appendedByObservers: boolean;
  /** The lease the run is driven under here: every write of it carries the fence, so a stale holder's writes are refused by the store. */
  fence: RunFence | undefined;
  /** Writes held for the run's next append (see `hold`). */
  held: HeldWrite | undefined;
  /** Held events whose append failed, kept for `heldEvents` until `forget`. */
  unwrittenHeld?: NewRunEvent[];
}

interface HeldWrite {
  events: NewRunEvent[];
  change: RunStateChange | undefined;
}

const CONFLICT = Symbol("conflict");

/** One change doing what `first` then `second` do, or CONFLICT when both write the same record. */
function mergeChanges(first: RunStateChange | undefined, second: RunStateChange | undefined): RunStateChange | undefined | typeof CONFLICT {
  if (!first) return second;
  if (!second) return first;
  if ((first.step && second.step) || (first.toolCall && second.toolCall) || (first.delivery && second.delivery)) return CONFLICT;
  const merged: RunStateChange = {};
  const run = first.run && second.run ? { ...first.run, ...second.run } : (second.run ?? first.run);
  if (run) merged.run = run;
  const step = second.step ?? first.step;
  if (step) merged.step = step;
  const toolCall = second.toolCall ?? first.toolCall;
  if (toolCall) merged.toolCall = toolCall;
  const delivery = second.delivery ?? first.delivery;
  if (delivery) merged.delivery = delivery;
  // A checkpoint is set or cleared (null): the later one wins.
  const checkpoint = second.checkpoint !== undefined ? second.checkpoint : first.checkpoint;
  if (checkpoint !== undefined) merged.checkpoint = checkpoint;
  return merged;
}

function withJsonData(event: NewRunEvent): NewRunEvent {
  return { type: event.type, data: dropUndefined(event.data ?? {}) };
}

/** `data` without its undefined values (which JSON drops): a new object, so the caller's stays its own. */
export function dropUndefined(data: Record<string, JsonValue | undefined>): Record<string, JsonValue> {
  const clean: Record<string, JsonValue> = {};
  for (const key of Object.keys(data)) {
    const value = data[key];
    if (value !== undefined) clean[key] = value;
  }
  return clean;
}
