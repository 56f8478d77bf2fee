import type { TelemetrySink, TelemetrySpan } from "@assemblyline-agents/core";
import { encodeExportRequest } from "./encode.js";
import { resolveOtlpOptions, type OtlpSinkOptions, type ResolvedOtlpOptions } from "./options.js";
import { retryDelayMs, shouldRetry } from "./retry.js";

export interface OtlpSinkStats {
  /** Spans the backend accepted. */
  exported: number;
  /** Spans dropped: queue full, refused (4xx), or out of attempts. */
  dropped: number;
  /** Spans waiting to be sent. */
  queued: number;
}

export interface OtlpSink extends TelemetrySink {
  flush(): Promise<void>;
  /** Flush, then stop the timer; later spans are dropped. */
  shutdown(): Promise<void>;
  stats(): OtlpSinkStats;
}

/**
 * OTLP/HTTP JSON trace export: spans are queued (bounded), sent in batches when
 * a batch fills or after scheduledDelayMs, retried with backoff on 429, 5xx and
 * network errors, and flushed on host shutdown.
 */
export function createOtlpSink(options: OtlpSinkOptions): OtlpSink {
  return new OtlpExporter(resolveOtlpOptions(options));
}

class OtlpExporter implements OtlpSink {
  private readonly queue: TelemetrySpan[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private closed = false;
  private readonly counts = { exported: 0, dropped: 0 };

  constructor(private readonly options: ResolvedOtlpOptions) {}

  export(span: TelemetrySpan): void {
    if (this.closed) return this.drop(1, "the sink is shut down");
    if (this.queue.length >= this.options.maxQueueSize) return this.drop(1, `the queue is full (maxQueueSize ${this.options.maxQueueSize})`);
    this.queue.push(span);
    if (this.queue.length >= this.options.maxBatchSize) void this.pump();
    else this.timer ??= setTimeout(() => void this.pump(), this.options.scheduledDelayMs).unref();
  }

  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.sending) await this.pump();
  }

  async shutdown(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  stats(): OtlpSinkStats {
    return { ...this.counts, queued: this.queue.length };
  }

  /** One sender at a time, so batches leave in order and a slow backend is not hit in parallel. */
  private pump(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.sending ??= (async () => {
      try {
        while (this.queue.length > 0) await this.send(this.queue.splice(0, this.options.maxBatchSize));
      } finally {
        this.sending = undefined;
      }
    })();
    return this.sending;
  }

  private async send(batch: TelemetrySpan[]): Promise<void> {
    const body = JSON.stringify(encodeExportRequest(batch));
    for (let attempt = 1; ; attempt += 1) {
      let status: number | undefined;
      let retryAfter: string | null = null;
      let problem: string;
      try {
        const response = await fetch(this.options.url, {
          method: "POST",
          headers: { ...this.options.headers, "content-type": "application/json" },
          body,
          signal: AbortSignal.timeout(this.options.timeoutMs),
        });
        status = response.status;
        retryAfter = response.headers.get("retry-after");
        const text = await response.text().catch(() => "");
        if (response.ok) {
          const rejected = rejectedSpans(text);
          this.counts.exported += batch.length - rejected;
          if (rejected > 0) this.drop(rejected, "the backend rejected part of the batch", { status });
          return;
        }
        problem = `HTTP ${status}`;
      } catch (error) {
        problem = error instanceof Error ? error.message : String(error);
      }
      if (!shouldRetry(status)) return this.drop(batch.length, `the backend refused the batch (${problem})`, { status });
      if (attempt >= this.options.maxAttempts) return this.drop(batch.length, `export failed ${attempt} times (last: ${problem})`, { status });
      await sleep(retryDelayMs(attempt, retryAfter, this.options));
    }
  }

  private drop(count: number, why: string, fields: Record<string, unknown> = {}): void {
    this.counts.dropped += count;
    const message = `OTLP export to ${new URL(this.options.url).origin} dropped ${count} span(s): ${why}`;
    const warn = this.options.onWarning ?? ((text, extra) => process.stderr.write(JSON.stringify({ level: "warn", time: new Date().toISOString(), msg: text, ...extra }) + "\n"));
    warn(message, { event: "telemetry.spans_dropped", dropped: count, ...fields });
  }
}

/** ExportTraceServiceResponse.partialSuccess.rejectedSpans, when the backend reports one. */
function rejectedSpans(text: string): number {
  try {
    const value = Number((JSON.parse(text) as { partialSuccess?: { rejectedSpans?: unknown } }).partialSuccess?.rejectedSpans ?? 0);
    return Number.isFinite(value) && value > 0 ? value : 0;
  } catch {
    return 0;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
