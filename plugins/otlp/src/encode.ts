import type { SpanAttributeValue, TelemetrySpan } from "@assemblyline-agents/core";

/** OTLP's SpanKind and StatusCode enum numbers (opentelemetry/proto/trace/v1/trace.proto). */
const SPAN_KIND = { internal: 1, client: 3 } as const;
const STATUS_CODE = { unset: 0, ok: 1, error: 2 } as const;
const SCOPE = { name: "@assemblyline-agents/otlp", version: "0.1.0" };

type AnyValue = { stringValue: string } | { intValue: string } | { doubleValue: number | "NaN" | "Infinity" | "-Infinity" } | { boolValue: boolean } | { arrayValue: { values: AnyValue[] } };
interface KeyValue {
  key: string;
  value: AnyValue;
}

/** One span in OTLP/JSON form, with the resource it belongs to. */
export interface EncodedSpan {
  resource: Record<string, string>;
  span: Record<string, unknown>;
}

/**
 * An ExportTraceServiceRequest in OTLP/JSON: proto3 JSON field names
 * (lowerCamelCase), enums as numbers, 64-bit integers as decimal strings, and
 * trace/span ids as hex (OTLP/JSON's exception to base64 bytes).
 */
export function encodeExportRequest(spans: TelemetrySpan[]): { resourceSpans: unknown[] } {
  return exportRequestOf(spans.map(encodeSpan));
}

/** Group encoded spans by resource into one request. */
export function exportRequestOf(spans: EncodedSpan[]): { resourceSpans: unknown[] } {
  const byResource = new Map<string, EncodedSpan[]>();
  for (const span of spans) {
    const key = JSON.stringify(Object.entries(span.resource).sort());
    byResource.set(key, [...(byResource.get(key) ?? []), span]);
  }
  return {
    resourceSpans: [...byResource.values()].map((group) => ({
      resource: { attributes: keyValues(group[0]!.resource) },
      scopeSpans: [{ scope: SCOPE, spans: group.map((item) => item.span) }],
    })),
  };
}

/**
 * Encode one span, or throw a RangeError saying why a collector would refuse it
 * (a malformed id, a time that is not a finite number): one such span in a
 * batch makes the collector refuse the whole request, so it is caught here.
 */
export function encodeSpan(span: TelemetrySpan): EncodedSpan {
  checkId("traceId", span.traceId, 32);
  checkId("spanId", span.spanId, 16);
  if (span.parentSpanId) checkId("parentSpanId", span.parentSpanId, 16);
  if (!(span.kind in SPAN_KIND)) throw new RangeError(`span kind ${JSON.stringify(span.kind)} is not internal or client`);
  if (!(span.status?.code in STATUS_CODE)) throw new RangeError(`status code ${JSON.stringify(span.status?.code)} is not unset, ok or error`);
  return {
    resource: span.resource,
    span: {
      traceId: span.traceId,
      spanId: span.spanId,
      ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
      name: span.name,
      kind: SPAN_KIND[span.kind],
      startTimeUnixNano: unixNano("startTimeMs", span.startTimeMs),
      endTimeUnixNano: unixNano("endTimeMs", span.endTimeMs),
      attributes: keyValues(span.attributes),
      status: { code: STATUS_CODE[span.status.code], ...(span.status.message ? { message: span.status.message } : {}) },
    },
  };
}

function checkId(field: string, value: unknown, length: number): void {
  if (typeof value !== "string" || value.length !== length || !/^[0-9a-f]+$/.test(value) || /^0+$/.test(value)) {
    throw new RangeError(`${field} ${JSON.stringify(value)} is not ${length} lowercase hex characters (and not all zero)`);
  }
}

function keyValues(attributes: Record<string, SpanAttributeValue>): KeyValue[] {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: anyValue(value) }));
}

function anyValue(value: SpanAttributeValue): AnyValue {
  if (Array.isArray(value)) return { arrayValue: { values: value.map((item) => ({ stringValue: String(item) })) } };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") {
    // intValue is an int64 as a decimal string: only integers JavaScript holds exactly fit ("1e+21" is no int64).
    if (Number.isSafeInteger(value)) return { intValue: String(value) };
    // JSON has no NaN or Infinity (JSON.stringify writes null, which a collector refuses); proto3 JSON spells them as strings.
    if (Number.isNaN(value)) return { doubleValue: "NaN" };
    if (!Number.isFinite(value)) return { doubleValue: value > 0 ? "Infinity" : "-Infinity" };
    return { doubleValue: value };
  }
  return { stringValue: String(value) };
}

function unixNano(field: string, ms: number): string {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) throw new RangeError(`${field} ${String(ms)} is not a time in milliseconds since the Unix epoch`);
  return (BigInt(Math.round(ms)) * 1_000_000n).toString();
}
