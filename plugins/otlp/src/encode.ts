import type { SpanAttributeValue, TelemetrySpan } from "@assemblyline-agents/core";

/** OTLP's SpanKind and StatusCode enum numbers (opentelemetry/proto/trace/v1/trace.proto). */
const SPAN_KIND = { internal: 1, client: 3 } as const;
const STATUS_CODE = { unset: 0, ok: 1, error: 2 } as const;
const SCOPE = { name: "@assemblyline-agents/otlp", version: "0.1.0" };

type AnyValue = { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean } | { arrayValue: { values: AnyValue[] } };
interface KeyValue {
  key: string;
  value: AnyValue;
}

/**
 * An ExportTraceServiceRequest in OTLP/JSON: proto3 JSON field names
 * (lowerCamelCase), enums as numbers, 64-bit integers as decimal strings, and
 * trace/span ids as hex (OTLP/JSON's exception to base64 bytes).
 */
export function encodeExportRequest(spans: TelemetrySpan[]): { resourceSpans: unknown[] } {
  const byResource = new Map<string, TelemetrySpan[]>();
  for (const span of spans) {
    const key = JSON.stringify(Object.entries(span.resource).sort());
    byResource.set(key, [...(byResource.get(key) ?? []), span]);
  }
  return {
    resourceSpans: [...byResource.values()].map((group) => ({
      resource: { attributes: keyValues(group[0]!.resource) },
      scopeSpans: [{ scope: SCOPE, spans: group.map(encodeSpan) }],
    })),
  };
}

function encodeSpan(span: TelemetrySpan) {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
    name: span.name,
    kind: SPAN_KIND[span.kind],
    startTimeUnixNano: unixNano(span.startTimeMs),
    endTimeUnixNano: unixNano(span.endTimeMs),
    attributes: keyValues(span.attributes),
    status: { code: STATUS_CODE[span.status.code], ...(span.status.message ? { message: span.status.message } : {}) },
  };
}

function keyValues(attributes: Record<string, SpanAttributeValue>): KeyValue[] {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: anyValue(value) }));
}

function anyValue(value: SpanAttributeValue): AnyValue {
  if (Array.isArray(value)) return { arrayValue: { values: value.map((item) => ({ stringValue: String(item) })) } };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { stringValue: value };
}

function unixNano(ms: number): string {
  return (BigInt(Math.round(ms)) * 1_000_000n).toString();
}
