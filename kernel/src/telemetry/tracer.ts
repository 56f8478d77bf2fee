import type { CaptureContent, EventContext, RunEvent, RunStore, RuntimeLogger, TelemetrySink, TelemetrySpan } from "@assemblyline-agents/core";
import { parentOf, RunTrace, type TraceLineage } from "./run-trace.js";
import { spanIdFor, traceIdFor } from "./span-ids.js";
import type { AbandonedModelCalls } from "../run/run-driver.js";

/** Events after which a run holds no open span in this process. */
const RESTING = new Set(["run.completed", "run.failed", "run.waiting_approval", "run.waiting_input"]);

export interface TracerOptions {
  runs: RunStore;
  sinks: TelemetrySink[];
  captureContent: Exclude<CaptureContent, "off">;
  serviceName: string;
  logger: RuntimeLogger;
}

/**
 * Turns each run's durable events into spans and hands them to the sinks.
 * It sees every event once (the journal's contract), so work that resumes or
 * replays is never exported twice. A run first seen mid-way (resumed in this
 * process) is caught up from its stored events without exporting them again.
 *
 * A run's trace is kept between its events only while this process drives the
 * run: between drives, or once another replica took the run over, others may
 * write to it, and a trace kept from before would build their work's spans
 * from stale state.
 */
export class Tracer {
  private readonly traces = new Map<string, RunTrace>();
  /** Runs this process drives now (see DriveWatch). */
  private readonly driven = new Set<string>();
  /** Per run, the tracer's work in order: a lost lease is handled after the events delivered before it. */
  private readonly queues = new Map<string, Promise<void>>();

  constructor(private readonly options: TracerOptions) {
    // A sink's own warnings go through the runtime's logger: one format and one level for everything the process says.
    for (const sink of options.sinks) {
      try {
        sink.useLogger?.(options.logger);
      } catch (error) {
        options.logger.warn({ event: "telemetry.sink_failed", err: String(error) }, "a telemetry sink refused the runtime's logger");
      }
    }
  }

  /** How many runs the tracer keeps anything of: none once no run is driven here. */
  get runsKnown(): number {
    return new Set([...this.traces.keys(), ...this.driven, ...this.queues.keys()]).size;
  }

  observe(event: RunEvent, context: EventContext): Promise<void> {
    return this.inOrder(event.runId, async () => {
      const trace = this.traces.get(event.runId) ?? (await this.catchUp(event, context));
      const spans = trace.apply(event);
      if (this.driven.has(event.runId) && !RESTING.has(event.type)) this.traces.set(event.runId, trace);
      else this.traces.delete(event.runId);
      for (const span of spans) await this.export(span);
    });
  }

  driveStarted(runId: string): void {
    this.driven.add(runId);
  }

  /**
   * The drive ended, or lost its lease. With the lease lost, the tool calls this
   * process left open end now, with the error: the replica that took the run
   * over continues them, and exports their own spans when they end; so do the
   * model calls it made whose results it will never record (`abandoned`).
   */
  driveStopped(runId: string, leaseLost: boolean, abandoned?: AbandonedModelCalls): Promise<void> {
    return this.inOrder(runId, async () => {
      this.driven.delete(runId);
      const trace = this.traces.get(runId);
      this.traces.delete(runId);
      if (!trace || !leaseLost) return;
      for (const span of trace.abandon(Date.now(), abandoned)) await this.export(span);
    });
  }

  /** Every sink's flush; `timeoutMs` is handed to each, which drops what it has not sent by then. */
  async flush({ timeoutMs }: { timeoutMs?: number } = {}): Promise<void> {
    await Promise.all(
      this.options.sinks.map(async (sink) => {
        try {
          await sink.flush?.(timeoutMs === undefined ? undefined : { timeoutMs });
        } catch (error) {
          this.options.logger.warn({ event: "telemetry.flush_failed", err: String(error) }, "a telemetry sink failed to flush");
        }
      }),
    );
  }

  private async catchUp(event: RunEvent, context: EventContext): Promise<RunTrace> {
    const earlier = event.seq > 1 ? (await this.options.runs.listEvents(event.runId)).filter((past) => past.seq < event.seq) : [];
    const created = [...earlier, event].find((candidate) => candidate.type === "run.created");
    const trace = new RunTrace(
      event.runId,
      {
        mode: this.options.captureContent,
        resource: { "service.name": this.options.serviceName, "service.version": context.agentRevision },
        agent: context,
      },
      created ? await this.lineageOf(created) : undefined,
    );
    for (const past of earlier) trace.apply(past);
    return trace;
  }

  /**
   * A subagent's run joins the trace of the run at the top of its chain of
   * parents (the run a user started), under the tool call that spawned it, so a
   * backend shows the subagent's work inside the call that waited for it.
   */
  private async lineageOf(created: RunEvent): Promise<TraceLineage | undefined> {
    const parent = parentOf(created.data);
    if (!parent) return undefined;
    let top = parent.runId;
    // Bounded: a chain of parents is as deep as subagents nest (a handful).
    for (let depth = 0; depth < 64; depth += 1) {
      const above = (await this.options.runs.getRun(top))?.input.parent;
      if (!above) break;
      top = above.runId;
    }
    return { traceId: traceIdFor(top), parentSpanId: spanIdFor(parent.runId, "tool", parent.callId) };
  }

  private inOrder(runId: string, work: () => Promise<void>): Promise<void> {
    const done = (this.queues.get(runId) ?? Promise.resolve()).then(work);
    const tracked = done
      .catch(() => undefined)
      .finally(() => {
        if (this.queues.get(runId) === tracked) this.queues.delete(runId);
      });
    this.queues.set(runId, tracked);
    return done;
  }

  private async export(span: TelemetrySpan): Promise<void> {
    for (const sink of this.options.sinks) {
      try {
        await sink.export(structuredClone(span));
      } catch (error) {
        this.options.logger.warn({ event: "telemetry.export_failed", runId: span.attributes["assembly_line.run.id"], span: span.name, err: String(error) }, "a telemetry sink failed to export a span");
      }
    }
  }
}
