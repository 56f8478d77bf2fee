import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { MAX_TIMER_MS, type RuntimeLogger, type TelemetrySink, type TelemetrySpan } from "@assemblyline-agents/core";
import { encodeSpan, exportRequestOf, type EncodedSpan } from "./encode.js";
import { resolveOtlpOptions, type OtlpSinkOptions, type ResolvedOtlpOptions } from "./options.js";
import { isRequestRefusal, retryDelayMs, shouldRetry } from "./retry.js";

const gzipAsync = promisify(gzip);

/**
 * The largest request body a batch is sent in (4 MiB, gRPC's default message
 * limit, which collectors and vendors' gateways often keep for OTLP/HTTP): a
 * batch of large spans (`captureContent: "full"`) goes in parts instead of
 * being refused whole.
 */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

export interface OtlpSinkStats {
  /** Spans the backend accepted. */
  exported: number;
  /** Spans dropped: queue full, refused (4xx, a redirect), or out of attempts. */
  dropped: number;
  /** Spans waiting to be sent. */
  queued: number;
}

export interface OtlpSink extends TelemetrySink {
  /** Send everything queued; with `timeoutMs`, give up then: what is not sent is dropped (reported), and no request or retry is left running. */
  flush(options?: { timeoutMs?: number }): Promise<void>;
  /** Flush, then stop the timer; later spans are dropped. */
  shutdown(): Promise<void>;
  stats(): OtlpSinkStats;
}

/**
 * OTLP/HTTP JSON trace export: spans are encoded when exported (a span a
 * collector would refuse is dropped alone, not with its batch), queued
 * (bounded), sent in batches when a batch fills or after scheduledDelayMs,
 * retried with backoff on 429, 502, 503, 504 and network errors within timeoutMs per
 * batch, and flushed on host shutdown. Nothing here throws into a run.
 */
export function createOtlpSink(options: OtlpSinkOptions): OtlpSink {
  return new OtlpExporter(resolveOtlpOptions(options));
}

class OtlpExporter implements OtlpSink {
  private readonly queue: EncodedSpan[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private closed = false;
  private readonly counts = { exported: 0, dropped: 0 };
  /** Spans dropped since the queue filled up: warned once when it fills, once more in sum when it takes spans again. */
  private droppedWhileFull = 0;
  /** The runtime's logger, once it started with this sink (useLogger): warnings go there unless onWarning is given. */
  private logger: RuntimeLogger | undefined;
  /**
   * Every request and retry wait listens to it. A bounded flush's deadline aborts
   * it and puts a fresh one in its place: what started before that deadline ends
   * at it, whoever started it (the batch timer, another flush), and what starts
   * after is not touched. Each flush keeps its own timer, so none replaces another's deadline.
   */
  private stop = new AbortController();

  constructor(private readonly options: ResolvedOtlpOptions) {}

  export(span: TelemetrySpan): void {
    if (this.closed) return this.drop(1, "the sink is shut down");
    if (this.queue.length >= this.options.maxQueueSize) {
      // A backend that is down for long fills the queue with every span a run makes: one line, not one per span.
      this.droppedWhileFull += 1;
      if (this.droppedWhileFull === 1) return this.drop(1, `the queue is full (maxQueueSize ${this.options.maxQueueSize}); further spans are dropped without a warning each until it has room`);
      this.counts.dropped += 1;
      return;
    }
    if (this.droppedWhileFull > 1) {
      // The first was reported when the queue filled: message and field count the others, so the fields of all warnings add up to stats().dropped.
      const unreported = this.droppedWhileFull - 1;
      this.warn(`OTLP export to ${new URL(this.options.url).origin} dropped ${unreported} more span(s) while its queue was full (${this.droppedWhileFull} in all); it has room again`, { event: "telemetry.spans_dropped", dropped: unreported });
    }
    this.droppedWhileFull = 0;
    let encoded: EncodedSpan;
    try {
      encoded = encodeSpan(this.withResourceAttributes(span));
    } catch (error) {
      return this.drop(1, `span ${JSON.stringify(String(span?.name))} is not valid OTLP (${error instanceof Error ? error.message : String(error)})`);
    }
    this.queue.push(encoded);
    if (this.queue.length >= this.options.maxBatchSize) void this.pump();
    else this.timer ??= setTimeout(() => void this.pump(), this.options.scheduledDelayMs).unref();
  }

  async flush(options: { timeoutMs?: number } = {}): Promise<void> {
    if (options.timeoutMs === undefined) {
      while (this.queue.length > 0 || this.sending) await this.pump();
      return;
    }
    let expired: { unsent: EncodedSpan[]; inFlight: Promise<void> | undefined } | undefined;
    let onExpiry = () => {};
    const deadline = new Promise<void>((resolve) => (onExpiry = resolve));
    const timer = setTimeout(() => {
      // The queue is taken first, so the sender stops after the batch in flight instead of starting the next.
      expired = { unsent: this.queue.splice(0), inFlight: this.sending };
      this.stop.abort();
      this.stop = new AbortController();
      onExpiry();
    }, Math.min(options.timeoutMs, MAX_TIMER_MS));
    try {
      while ((this.queue.length > 0 || this.sending) && !expired) await Promise.race([this.pump(), deadline]);
    } finally {
      clearTimeout(timer);
    }
    if (!expired) return;
    // The batch in flight ends at once (its request or retry wait is aborted) and is reported first.
    await expired.inFlight;
    if (expired.unsent.length > 0) this.drop(expired.unsent.length, `the flush ran out of its ${options.timeoutMs} ms before they were sent`);
  }

  /** The sink's resource attributes under the span's own: the runtime knows its service name and revision best. */
  private withResourceAttributes(span: TelemetrySpan): TelemetrySpan {
    const added = this.options.resourceAttributes;
    if (Object.keys(added).length === 0) return span;
    return { ...span, resource: { ...added, ...span?.resource } };
  }

  useLogger(logger: RuntimeLogger): void {
    this.logger = logger;
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
      // Taken once: a bounded flush's deadline ends this run, and later spans go out in a run of their own.
      const stop = this.stop.signal;
      try {
        while (this.queue.length > 0 && !stop.aborted) {
          const batch = this.queue.splice(0, this.options.maxBatchSize);
          // A failure here must not become an unhandled rejection (export() and the timer do not await this).
          await this.send(batch, stop).catch((error: unknown) => this.drop(batch.length, `export failed (${error instanceof Error ? error.message : String(error)})`));
        }
      } finally {
        this.sending = undefined;
        // Spans queued while the run was ending (a full batch found it still running) are not left without a timer.
        if (this.queue.length > 0 && !this.closed) this.timer ??= setTimeout(() => void this.pump(), this.options.scheduledDelayMs).unref();
      }
    })();
    return this.sending;
  }

  /**
   * One batch, tried until it is accepted, refused, out of attempts or out of
   * time: timeoutMs bounds the whole export, every try and wait included (what
   * OTEL_EXPORTER_OTLP_TIMEOUT means), so an unreachable backend holds a flush,
   * and with it the host's shutdown, for at most timeoutMs per batch.
   */
  private async send(batch: EncodedSpan[], stop: AbortSignal, deadline = Date.now() + this.options.timeoutMs): Promise<void> {
    const body = JSON.stringify(exportRequestOf(batch));
    if (batch.length > 1 && Buffer.byteLength(body) > MAX_REQUEST_BYTES) return this.sendHalves(batch, stop, deadline);
    // The 4 MiB bound applies before compression: what the collector holds once it has decoded the body.
    const encoded = this.options.compression === "gzip" ? await gzipAsync(body) : body;
    for (let attempt = 1; ; attempt += 1) {
      let status: number | undefined;
      let retryAfter: string | null = null;
      let problem: string;
      const request = requestSignal(stop, Math.max(1, deadline - Date.now()));
      try {
        const response = await fetch(this.options.url, {
          method: "POST",
          headers: { ...this.options.headers, "content-type": "application/json", ...(encoded === body ? {} : { "content-encoding": "gzip" }) },
          body: encoded,
          signal: request.signal,
          // Followed, a redirect would take the sink's headers (vendors' API keys: fetch strips only Authorization) to
          // wherever it points, and a 301/302/303 would turn the POST into a bodiless GET whose 200 looks like an export.
          redirect: "manual",
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
        if (status >= 300 && status < 400) return this.drop(batch.length, redirectRefusal(status, response.headers.get("location"), this.options.url), { status });
        problem = `HTTP ${status}`;
      } catch (error) {
        if (stop.aborted) return this.drop(batch.length, "the flush ran out of time while it was being sent");
        // Its message may quote the header value it could not send: not repeated.
        if (isRequestRefusal(error)) return this.drop(batch.length, "fetch refused to send the request (a header value or the URL it cannot carry); check the sink's headers and endpoint");
        problem = error instanceof Error ? `${error.message}${causeOf(error)}` : String(error);
      } finally {
        request.done();
      }
      // Too large for this backend: the halves may not be, down to a single span, which is dropped alone.
      if (status === 413 && batch.length > 1) return this.sendHalves(batch, stop, deadline);
      if (status === 413) return this.drop(1, `the backend refused span ${JSON.stringify(String(batch[0]!.span.name))} as too large (${problem}); a smaller captureContent keeps spans small`, { status });
      if (!shouldRetry(status)) return this.drop(batch.length, `the backend refused the batch (${problem})`, { status });
      if (attempt >= this.options.maxAttempts) return this.drop(batch.length, `export failed ${attempt} times (last: ${problem})`, { status });
      const delay = retryDelayMs(attempt, retryAfter, this.options);
      if (Date.now() + delay >= deadline) return this.drop(batch.length, `export failed ${attempt} time(s) within timeoutMs ${this.options.timeoutMs} (last: ${problem})`, { status });
      if (stop.aborted) return this.drop(batch.length, `the flush ran out of time after ${attempt} failed attempt(s) (last: ${problem})`, { status });
      // A bounded flush's deadline ends the wait at once: no timer outlives the flush.
      const waited = await sleep(delay, true, { signal: stop }).catch(() => false);
      if (!waited) return this.drop(batch.length, `the flush ran out of time after ${attempt} failed attempt(s) (last: ${problem})`, { status });
    }
  }

  /** The batch in two requests, one after the other, within the batch's deadline. */
  private async sendHalves(batch: EncodedSpan[], stop: AbortSignal, deadline: number): Promise<void> {
    const half = Math.ceil(batch.length / 2);
    await this.send(batch.slice(0, half), stop, deadline);
    await this.send(batch.slice(half), stop, deadline);
  }

  private drop(count: number, why: string, fields: Record<string, unknown> = {}): void {
    this.counts.dropped += count;
    this.warn(`OTLP export to ${new URL(this.options.url).origin} dropped ${count} span(s): ${why}`, { event: "telemetry.spans_dropped", dropped: count, ...fields });
  }

  private warn(message: string, fields: Record<string, unknown>): void {
    const logger = this.logger;
    const warn =
      this.options.onWarning ??
      (logger
        ? (text: string, extra: Record<string, unknown>) => logger.warn(extra, text)
        : // Made outside a runtime (or before it started): one JSON line on stderr, in the runtime's log format.
          (text: string, extra: Record<string, unknown>) => process.stderr.write(JSON.stringify({ level: "warn", time: new Date().toISOString(), msg: text, ...extra }) + "\n"));
    try {
      warn(message, fields);
    } catch {
      // A throwing onWarning must not reach the run that exported the span, nor the background sender.
    }
  }
}

/**
 * One request's signal: aborted by the sink's `stop` or after `ms`. Not made with
 * AbortSignal.any([AbortSignal.timeout(ms), stop]): on Node 20 that leaves an entry
 * in the long-lived `stop` for every request, and holds the timeout signal only
 * weakly, so a GC during the request collects it and it never fires (a collector
 * that never answers would hold a flush for ever). A listener and a timer instead,
 * both ended by done().
 */
function requestSignal(stop: AbortSignal, ms: number): { signal: AbortSignal; done(): void } {
  const own = new AbortController();
  const onStop = () => own.abort(stop.reason);
  // Unref'd, as AbortSignal.timeout's is: the request holds the process, not its time limit.
  const timer = setTimeout(() => own.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError")), ms).unref();
  if (stop.aborted) own.abort(stop.reason);
  else stop.addEventListener("abort", onStop, { once: true });
  return {
    signal: own.signal,
    done() {
      clearTimeout(timer);
      stop.removeEventListener("abort", onStop);
    },
  };
}

/**
 * Why a redirect ends the batch: where it pointed (the origin only: a query may
 * hold a key), and that the endpoint should be that final URL.
 */
function redirectRefusal(status: number, location: string | null, url: string): string {
  let target = "no Location";
  try {
    if (location !== null) target = new URL(location, url).origin;
  } catch {
    target = "a Location that is not a URL";
  }
  return `the endpoint answered HTTP ${status}, a redirect (to ${target}), which the sink does not follow: its headers would go there and a 301, 302 or 303 would resend the batch as a GET without its spans; set the endpoint to the URL the collector redirects to`;
}

/** A network failure's reason ("fetch failed" alone says nothing): the socket error fetch wraps. */
function causeOf(error: Error): string {
  const cause = error.cause;
  return cause instanceof Error && cause.message !== "" ? `: ${cause.message}` : "";
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
