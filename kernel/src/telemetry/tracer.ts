import type { CaptureContent, EventContext, RunEvent, RunStore, RuntimeLogger, TelemetrySink, TelemetrySpan } from "@assemblyline-agents/core";
import { RunTrace } from "./run-trace.js";

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
 */
export class Tracer {
  private readonly traces = new Map<string, RunTrace>();

  constructor(private readonly options: TracerOptions) {}

  async observe(event: RunEvent, context: EventContext): Promise<void> {
    const trace = this.traces.get(event.runId) ?? (await this.catchUp(event, context));
    const spans = trace.apply(event);
    if (RESTING.has(event.type)) this.traces.delete(event.runId);
    for (const span of spans) await this.export(span);
  }

  async flush(): Promise<void> {
    await Promise.all(
      this.options.sinks.map(async (sink) => {
        try {
          await sink.flush?.();
        } catch (error) {
          this.options.logger.warn({ event: "telemetry.flush_failed", err: String(error) }, "a telemetry sink failed to flush");
        }
      }),
    );
  }

  private async catchUp(event: RunEvent, context: EventContext): Promise<RunTrace> {
    const trace = new RunTrace(event.runId, {
      mode: this.options.captureContent,
      resource: { "service.name": this.options.serviceName, "service.version": context.agentRevision },
      agent: context,
    });
    if (event.seq > 1) {
      const earlier = await this.options.runs.listEvents(event.runId);
      for (const past of earlier) if (past.seq < event.seq) trace.apply(past);
    }
    this.traces.set(event.runId, trace);
    return trace;
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
