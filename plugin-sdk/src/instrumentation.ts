import { brand, hasBrand, type Branded } from "./brand.js";
import type { RuntimeLogger } from "./infrastructure.js";

/** A span attribute value, as OTLP carries it. */
export type SpanAttributeValue = string | number | boolean | string[];

/**
 * One finished span the runtime built from a run's durable events, after
 * `captureContent` was applied. Sinks only ever see these, never raw events.
 *
 * Ids are derived from the run and the work the span describes, so the same
 * work always has the same span id (a backend deduplicates a re-export).
 */
export interface TelemetrySpan {
  /** 32 lowercase hex characters; one trace per run a user starts (a subagent's run joins its parent's). */
  traceId: string;
  /** 16 lowercase hex characters. */
  spanId: string;
  /** Absent on the root span (`invoke_agent`) of a run a user started; a subagent's points at the spawning call. */
  parentSpanId?: string;
  /** E.g. `invoke_agent support-bot`, `chat openai/gpt-5.4-mini`, `execute_tool record_note`, `step harness:model:0`. */
  name: string;
  /** `client` for model calls, `internal` otherwise. */
  kind: "internal" | "client";
  /** Milliseconds since the Unix epoch. */
  startTimeMs: number;
  endTimeMs: number;
  status: { code: "unset" | "ok" | "error"; message?: string };
  /** GenAI semantic-convention attributes (`gen_ai.*`) plus `assembly_line.*`. */
  attributes: Record<string, SpanAttributeValue>;
  /** Resource attributes, e.g. `service.name`. */
  resource: Record<string, string>;
}

/** Where telemetry goes. */
export interface TelemetrySink {
  /** Receive one finished span; queue it rather than block (the run waits for this call). */
  export(span: TelemetrySpan): void | Promise<void>;
  /**
   * Export everything queued; called by the host's shutdown and `runtime.close()`.
   * `timeoutMs`, when a host bounds its exit (the CLI does), is how long the sink may
   * take: what it has not exported by then it drops, and nothing of it (a retry's
   * timer, a request) keeps the process running after.
   */
  flush?(options?: { timeoutMs?: number }): Promise<void>;
  /**
   * Called by the runtime when it starts with the sink: its logger, where the sink's
   * own warnings (spans dropped, a backend refusing them) belong, under the runtime's
   * log level and format. Must not throw.
   */
  useLogger?(logger: RuntimeLogger): void;
}

export const CAPTURE_CONTENT_MODES = ["usage", "content", "full", "off"] as const;
export type CaptureContent = (typeof CAPTURE_CONTENT_MODES)[number];

/** Characters kept of one body attribute before it is cut (see docs/telemetry.md). */
export const CAPTURE_BODY_LIMITS = { content: 4_096, full: 65_536 } as const;

export interface InstrumentationOptions {
  serviceName?: string;
  /** Default "usage": token/cost/model/tool metadata, no message bodies. */
  captureContent?: CaptureContent;
  setup(args: { env: Record<string, string | undefined> }): TelemetrySink | undefined | Promise<TelemetrySink | undefined>;
}

export type InstrumentationDefinition = InstrumentationOptions & Branded<"assembly-line.instrumentation">;

export function defineInstrumentation(options: InstrumentationOptions): InstrumentationDefinition {
  return brand("assembly-line.instrumentation", options);
}

export function isInstrumentationDefinition(value: unknown): value is InstrumentationDefinition {
  return hasBrand(value, "assembly-line.instrumentation");
}

export function isTelemetrySink(value: unknown): value is TelemetrySink {
  return typeof value === "object" && value !== null && typeof (value as TelemetrySink).export === "function";
}
