import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { SpanAttributeValue } from "@assemblyline-agents/core";
import type { DeliveredSpan } from "@assemblyline-agents/core/testkit";

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{
      spans?: Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string; startTimeUnixNano: string; endTimeUnixNano: string; status?: { code?: number }; attributes?: KeyValue[] }>;
    }>;
  }>;
}

const STATUS = ["unset", "ok", "error"] as const;

function attributeValue(value: AnyValue): SpanAttributeValue {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map((item) => String(attributeValue(item)));
  throw new Error(`an attribute value with no known field: ${JSON.stringify(value)}`);
}

const attributes = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map(({ key, value }) => [key, attributeValue(value)]));

/** The spans of one OTLP/JSON ExportTraceServiceRequest, as a backend stores them (ids hex, times in ms). */
function decode(request: ExportRequest): DeliveredSpan[] {
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = Object.fromEntries(Object.entries(attributes(resourceSpans.resource?.attributes)).map(([key, value]) => [key, String(value)]));
    return (resourceSpans.scopeSpans ?? []).flatMap((scopeSpans) =>
      (scopeSpans.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
        name: span.name,
        startTimeMs: Number(BigInt(span.startTimeUnixNano) / 1_000_000n),
        endTimeMs: Number(BigInt(span.endTimeUnixNano) / 1_000_000n),
        status: STATUS[span.status?.code ?? 0] ?? "unset",
        attributes: attributes(span.attributes),
        resource,
      })),
    );
  });
}

export interface OtlpJsonReceiver {
  /** Base URL; the sink posts to <url>/v1/traces. */
  url: string;
  spans: DeliveredSpan[];
  /** Requests it could not decode, with why. */
  failures: string[];
  close(): Promise<void>;
}

/** An OTLP/HTTP JSON trace receiver on 127.0.0.1: what `plugins verify` runs the telemetry-sink kit against. */
export async function startOtlpJsonReceiver(): Promise<OtlpJsonReceiver> {
  const spans: DeliveredSpan[] = [];
  const failures: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        if (req.method !== "POST" || req.url !== "/v1/traces") throw new Error(`${req.method} ${req.url} is not POST /v1/traces`);
        if (req.headers["content-type"] !== "application/json") throw new Error(`content-type ${req.headers["content-type"]}`);
        spans.push(...decode(JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportRequest));
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ code: 3, message: String(error) }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    failures,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
