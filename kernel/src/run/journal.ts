import type { AppendOptions, JsonValue, NewRunEvent, RunEvent, RunFence, RunRecord, RunStateChange, RunStore, RuntimeLogger } from "@assemblyline-agents/core";
import { onlySyncTaps, reachesAnyone, type EventContext, type KernelHooks } from "../hooks.js";
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
  /** Per-run chain so observers see events in seq order even when appends race. */
  private readonly dispatching = new Map<string, Promise<void>>();
  /** The highest seq observers have seen, per run this process has observed. */
  private readonly observedSeq = new Map<string, number>();
  /** Observer positions not yet written to the store: they ride on the run's next append. */
  private readonly unwrittenSeq = new Map<string, number>();
  /** What drives of fresh runs have written (see OwnWrites), by run. */
  private readonly ownWrites = new Map<string, OwnWrites>();
  /** Runs an observer appended to while events were being delivered. */
  private readonly appendedByObservers = new Set<string>();
  /** The lease each run is driven under here: every write of it carries the fence, so a stale holder's writes are refused by the store. */
  private readonly fences = new Map<string, RunFence>();
  /** Writes held for the run's next append (see `hold`). */
  private readonly held = new Map<string, HeldWrite>();

  constructor(
    private readonly runs: RunStore,
    private readonly hooks: KernelHooks,
    private readonly eventContext: EventContext,
    private readonly logger: RuntimeLogger,
  ) {}

  /**
   * The run was queued when this drive took its lease: from now until `forget`,
   * `ownWritesOf` answers for its steps, tool calls and checkpoint.
   */
  trackOwnWrites(run: RunRecord): void {
    this.ownWrites.set(run.id, new OwnWrites(run));
  }

  /** What this drive of a fresh run has written; undefined when the store must be asked. */
  ownWritesOf(runId: string): OwnWrites | undefined {
    return this.ownWrites.get(runId);
  }

  /** Fence this run's writes with `fence` (the lease it is driven under), or stop fencing them (undefined). */
  holdFence(runId: string, fence: RunFence | undefined): void {
    if (fence) this.fences.set(runId, { owner: fence.owner, token: fence.token });
    else this.fences.delete(runId);
  }

  async append(runId: string, events: NewRunEvent[], change?: RunStateChange, options?: { expectedLastSeq?: number }): Promise<RunEvent[]> {
    const own = events.map(withJsonData);
    const held = this.held.get(runId);
    this.held.delete(runId);
    const merged = held ? mergeChanges(held.change, change) : change;
    if (held && merged === CONFLICT) {
      // Two changes to one record cannot share an append: the held one goes first, and the log moved by its events.
      await this.commit(runId, held.events, held.change, options);
      const shifted = options?.expectedLastSeq === undefined ? options : { ...options, expectedLastSeq: options.expectedLastSeq + held.events.length };
      return this.commit(runId, own, change, shifted);
    }
    const recorded = await this.commit(runId, held ? [...held.events, ...own] : own, merged as RunStateChange | undefined, options);
    return held ? recorded.slice(held.events.length) : recorded;
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
    const held = this.held.get(runId);
    if (!held) {
      this.held.set(runId, { events: own, change });
      return;
    }
    const merged = mergeChanges(held.change, change);
    if (merged === CONFLICT) {
      await this.append(runId, []);
      this.held.set(runId, { events: own, change });
      return;
    }
    this.held.set(runId, { events: [...held.events, ...own], change: merged });
  }

  private async commit(runId: string, events: NewRunEvent[], change: RunStateChange | undefined, options: { expectedLastSeq?: number } | undefined): Promise<RunEvent[]> {
    const recorded = await this.write(runId, events, change, options);
    if (!this.dispatching.has(runId) && this.deliverAtOnce(runId, recorded)) return recorded;
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
    if (!this.fences.has(runId) || this.appendedByObservers.has(runId) || recorded.length === 0) return false;
    const seen = this.observedSeq.get(runId);
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
    this.observedSeq.set(runId, last);
    this.unwrittenSeq.set(runId, last);
    return true;
  }

  /** appendEvents with the fence, carrying the observers' position if it is not written yet. */
  private async write(runId: string, events: NewRunEvent[], change: RunStateChange | undefined, options: { expectedLastSeq?: number } | undefined): Promise<RunEvent[]> {
    const observedSeq = this.unwrittenSeq.get(runId);
    const fence = this.fences.get(runId);
    const appendOptions: AppendOptions = {};
    if (options?.expectedLastSeq !== undefined) appendOptions.expectedLastSeq = options.expectedLastSeq;
    if (fence) appendOptions.fence = fence;
    if (observedSeq !== undefined) appendOptions.observedSeq = observedSeq;
    const recorded = await this.runs.appendEvents(runId, events, change, appendOptions);
    if (observedSeq !== undefined && this.unwrittenSeq.get(runId) === observedSeq) this.unwrittenSeq.delete(runId);
    if (change) this.ownWrites.get(runId)?.committed(change);
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
    if (known) this.observedSeq.set(runId, known.observedSeq);
    else this.observedSeq.delete(runId);
    if (known && !this.dispatching.has(runId) && this.deliverAtOnce(runId, known.events)) return Promise.resolve();
    return this.chain(runId, () => this.deliver(runId, known?.events ?? []));
  }

  /**
   * Forget the run once its drive ends (finished or paused), after any delivery in
   * flight: a resting run holds no memory in this process, and a later delivery
   * reads its position back from the store. Returns where observers got to if the
   * store does not have it yet: the caller writes it, with the lease's release.
   */
  async forget(runId: string): Promise<number | undefined> {
    this.ownWrites.delete(runId);
    this.held.delete(runId);
    let unwritten: number | undefined;
    await this.chain(runId, async () => {
      this.observedSeq.delete(runId);
      this.appendedByObservers.delete(runId);
      unwritten = this.unwrittenSeq.get(runId);
      this.unwrittenSeq.delete(runId);
    });
    return unwritten;
  }

  /**
   * Append without waiting for observers: for events observers themselves cause
   * (`hook.failed`), which the running delivery picks up from the store.
   */
  async appendUnobserved(runId: string, events: NewRunEvent[]): Promise<RunEvent[]> {
    const recorded = await this.write(runId, events.map(withJsonData), undefined, undefined);
    this.appendedByObservers.add(runId);
    return recorded;
  }

  private chain(runId: string, work: () => Promise<void>): Promise<void> {
    const previous = this.dispatching.get(runId) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tracked = next.finally(() => {
      if (this.dispatching.get(runId) === tracked) this.dispatching.delete(runId);
    });
    this.dispatching.set(runId, tracked);
    return tracked;
  }

  private async deliver(runId: string, recorded: RunEvent[]): Promise<void> {
    let batch = recorded;
    for (;;) {
      const seen = this.observedSeq.get(runId);
      // Unknown position, nothing in hand, or not the next seq: read what observers missed from the store.
      if (seen === undefined || batch.length === 0 || batch[0]!.seq !== seen + 1) {
        const from = seen ?? (await this.runs.getRun(runId))?.observedSeq;
        if (from === undefined) return;
        batch = await this.runs.listEvents(runId, { afterSeq: from });
        if (batch.length === 0) {
          this.observedSeq.set(runId, from);
          return;
        }
      }
      this.appendedByObservers.delete(runId);
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
      this.observedSeq.set(runId, last);
      // Driven here: the position rides on the run's next append (or is written when it rests).
      if (this.fences.has(runId)) this.unwrittenSeq.set(runId, last);
      else await this.runs.markObserved(runId, last);
      // An observer appended (hook.failed) while we delivered: deliver that too.
      if (!this.appendedByObservers.has(runId)) return;
      batch = [];
    }
  }
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
