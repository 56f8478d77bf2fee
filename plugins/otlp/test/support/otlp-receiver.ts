import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import protobuf from "protobufjs";

const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "proto");

/** The official OTLP proto definitions (opentelemetry-proto, Apache-2.0), loaded once. */
function loadRequestType(): protobuf.Type {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  root.loadSync("opentelemetry/proto/collector/trace/v1/trace_service.proto");
  return root.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");
}

const ID_FIELDS = new Set(["traceId", "spanId", "parentSpanId"]);

/** A decoded span, flattened with its resource, as a backend stores it. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  status: { code?: number; message?: string };
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  scope: { name?: string; version?: string };
}

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  spans: ReceivedSpan[];
}

/**
 * An OTLP/HTTP trace receiver for tests. Each request body is decoded the way
 * a collector decodes OTLP/JSON: every key must be a field of the proto
 * message (lowerCamelCase JSON name), ids are hex, 64-bit integers decimal
 * strings; the message then goes through protobuf binary and back, so a field
 * the proto does not have, or a value of the wrong type, fails the test.
 */
export async function startOtlpReceiver(options: { responses?: Array<{ status: number; headers?: Record<string, string>; body?: string }> } = {}) {
  const requestType = loadRequestType();
  const requests: ReceivedRequest[] = [];
  const failures: string[] = [];
  const scripted = [...(options.responses ?? [])];
  let attempts = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      attempts += 1;
      const next = scripted.shift();
      if (next && next.status !== 200) {
        res.writeHead(next.status, next.headers ?? {}).end(next.body ?? "");
        return;
      }
      try {
        if (req.method !== "POST") throw new Error(`method ${req.method}`);
        if (req.headers["content-type"] !== "application/json") throw new Error(`content-type ${req.headers["content-type"]}`);
        // As a collector does: a gzip body (Content-Encoding: gzip) is decoded first, any other encoding refused.
        const encoding = req.headers["content-encoding"];
        if (encoding !== undefined && encoding !== "gzip") throw new Error(`content-encoding ${encoding}`);
        const raw = encoding === "gzip" ? gunzipSync(Buffer.concat(chunks)) : Buffer.concat(chunks);
        const spans = decode(requestType, JSON.parse(raw.toString("utf8")));
        requests.push({ path: req.url ?? "", headers: req.headers, spans });
        res.writeHead(200, { "content-type": "application/json" }).end(next?.body ?? "{}");
      } catch (error) {
        failures.push(String(error instanceof Error ? error.message : error));
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ code: 3, message: String(error) }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failures,
    attempts: () => attempts,
    spans: () => requests.flatMap((request) => request.spans),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function decode(requestType: protobuf.Type, json: unknown): ReceivedSpan[] {
  checkFields(requestType, json, "ExportTraceServiceRequest");
  const message = requestType.fromObject(hexIdsToBase64(json) as Record<string, unknown>);
  const problem = requestType.verify(message);
  if (problem) throw new Error(`invalid ExportTraceServiceRequest: ${problem}`);
  const wire = requestType.encode(message).finish();
  const decoded = requestType.toObject(requestType.decode(wire), { longs: String, enums: Number, bytes: String, defaults: false }) as {
    resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ scope?: { name?: string; version?: string }; spans?: Array<Record<string, unknown>> }> }>;
  };
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of decoded.resourceSpans ?? []) {
    const resource = attributeMap(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        spans.push({
          traceId: base64ToHex(span.traceId as string),
          spanId: base64ToHex(span.spanId as string),
          parentSpanId: span.parentSpanId ? base64ToHex(span.parentSpanId as string) : "",
          name: span.name as string,
          kind: span.kind as number,
          startTimeUnixNano: span.startTimeUnixNano as string,
          endTimeUnixNano: span.endTimeUnixNano as string,
          status: (span.status ?? {}) as ReceivedSpan["status"],
          attributes: attributeMap(span.attributes as KeyValue[] | undefined),
          resource,
          scope: scopeSpans.scope ?? {},
        });
      }
    }
  }
  return spans;
}

/** Reject any key that is not a field of the message, recursively. */
function checkFields(type: protobuf.Type, value: unknown, path: string): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${path} must be a JSON object`);
  for (const [key, item] of Object.entries(value)) {
    const field = type.fields[key];
    if (!field) throw new Error(`${path}.${key} is not a field of ${type.fullName}`);
    field.resolve();
    if (ID_FIELDS.has(key) && (typeof item !== "string" || !/^[0-9a-f]*$/.test(item))) throw new Error(`${path}.${key} must be a hex string`);
    if (field.type === "fixed64" && (typeof item !== "string" || !/^\d+$/.test(item))) throw new Error(`${path}.${key} must be a decimal string`);
    if (field.type === "int64" && (typeof item !== "string" || !/^-?\d+$/.test(item))) throw new Error(`${path}.${key} must be a decimal string`);
    if (field.resolvedType instanceof protobuf.Type) {
      const nested = field.resolvedType;
      if (field.repeated) {
        if (!Array.isArray(item)) throw new Error(`${path}.${key} must be an array`);
        item.forEach((element, index) => checkFields(nested, element, `${path}.${key}[${index}]`));
      } else checkFields(nested, item, `${path}.${key}`);
    }
  }
}

/** OTLP/JSON carries ids as hex; protobuf's JSON mapping expects base64 bytes. */
function hexIdsToBase64(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(hexIdsToBase64);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, ID_FIELDS.has(key) && typeof item === "string" ? Buffer.from(item, "hex").toString("base64") : hexIdsToBase64(item)]));
}

function base64ToHex(value: string): string {
  return Buffer.from(value, "base64").toString("hex");
}

interface KeyValue {
  key: string;
  value: Record<string, unknown>;
}

function attributeMap(attributes: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((attributes ?? []).map(({ key, value }) => [key, anyValue(value)]));
}

function anyValue(value: Record<string, unknown>): unknown {
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return value.doubleValue;
  if ("boolValue" in value) return value.boolValue;
  if ("arrayValue" in value) return ((value.arrayValue as { values?: Array<Record<string, unknown>> }).values ?? []).map(anyValue);
  return undefined;
}
