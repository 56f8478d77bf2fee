import type { JsonValue, NewRunEvent, RunEvent, RunStateChange, RunStore, RuntimeLogger } from "@assemblyline-agents/core";
import type { EventContext, KernelHooks } from "../hooks.js";

/**
 * Appends a run's events with their state changes, then lets observers
 * (`hooks.event`: hooks/ files, telemetry, hosts) see each one once, in order,
 * only after it is committed.
 */
export class RunJournal {
  /** Per-run chain so observers see events in seq order even when appends race. */
  private readonly dispatching = new Map<string, Promise<void>>();

  constructor(
    private readonly runs: RunStore,
    private readonly hooks: KernelHooks,
    private readonly eventContext: EventContext,
    private readonly logger: RuntimeLogger,
  ) {}

  async append(runId: string, events: NewRunEvent[], change?: RunStateChange, options?: { expectedLastSeq?: number }): Promise<RunEvent[]> {
    const recorded = await this.runs.appendEvents(runId, events.map(withJsonData), change, options);
    await this.observe(runId);
    return recorded;
  }

  async record(
    runId: string,
    type: string,
    data: Record<string, JsonValue | undefined> = {},
    change?: RunStateChange,
    options?: { expectedLastSeq?: number },
  ): Promise<RunEvent> {
    const [event] = await this.append(runId, [{ type, data: dropUndefined(data) }], change, options);
    return event!;
  }

  /** Deliver every committed event observers have not seen yet (also after a crash). */
  observe(runId: string): Promise<void> {
    const previous = this.dispatching.get(runId) ?? Promise.resolve();
    const next = previous.then(() => this.drain(runId));
    const tracked = next.finally(() => {
      if (this.dispatching.get(runId) === tracked) this.dispatching.delete(runId);
    });
    this.dispatching.set(runId, tracked);
    return tracked;
  }

  /**
   * Append without waiting for observers: for events observers themselves cause
   * (`hook.failed`), which the running drain picks up.
   */
  appendUnobserved(runId: string, events: NewRunEvent[]): Promise<RunEvent[]> {
    return this.runs.appendEvents(runId, events.map(withJsonData));
  }

  private async drain(runId: string): Promise<void> {
    const run = await this.runs.getRun(runId);
    if (!run) return;
    let observedSeq = run.observedSeq;
    for (;;) {
      const pending = await this.runs.listEvents(runId, { afterSeq: observedSeq });
      if (pending.length === 0) return;
      observedSeq = await this.deliver(runId, pending);
    }
  }

  private async deliver(runId: string, pending: RunEvent[]): Promise<number> {
    let observedSeq = 0;
    for (const event of pending) {
      try {
        await this.hooks.event.promise(event, this.eventContext);
      } catch (error) {
        // Taps isolate their own failures; reaching here means an observer broke the contract.
        this.logger.error({ runId, seq: event.seq, err: String(error) }, "event observer failed");
      }
      await this.runs.markObserved(runId, event.seq);
      observedSeq = event.seq;
    }
    return observedSeq;
  }
}

function withJsonData(event: NewRunEvent): NewRunEvent {
  return { type: event.type, data: dropUndefined(event.data ?? {}) };
}

function dropUndefined(data: Record<string, JsonValue | undefined>): Record<string, JsonValue> {
  const clean: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(data)) if (value !== undefined) clean[key] = value;
  return clean;
}
