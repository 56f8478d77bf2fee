import { AssemblyLineError, MAX_TIMER_MS } from "@assemblyline-agents/core";
import { definedOnly, tracesUrl, type OtlpSinkOptions } from "./options.js";
import { createOtlpSink, type OtlpSink } from "./sink.js";

const DEFAULT_ENDPOINT = "http://localhost:4318";

/**
 * The sink the standard OpenTelemetry variables describe:
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or OTEL_EXPORTER_OTLP_ENDPOINT
 * (+ /v1/traces, default http://localhost:4318), OTEL_EXPORTER_OTLP_HEADERS and
 * OTEL_EXPORTER_OTLP_TIMEOUT. The traces-only variables win over the general
 * ones, as in every OpenTelemetry SDK: OTEL_EXPORTER_OTLP_TRACES_HEADERS adds to
 * (and overrides keys of) the general headers, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT
 * replaces the general timeout, and OTEL_EXPORTER_OTLP_TRACES_COMPRESSION the general
 * OTEL_EXPORTER_OTLP_COMPRESSION (gzip or none). OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL may only
 * be http/json, what this sink speaks; the TLS file variables (OTEL_EXPORTER_OTLP_(TRACES_)CERTIFICATE,
 * _CLIENT_CERTIFICATE, _CLIENT_KEY) are refused, not implemented. OTEL_RESOURCE_ATTRIBUTES is added
 * to every span's resource, under the runtime's attributes. Explicit options win over the environment
 * (one left undefined does not: the variable's value stays): an override's
 * endpoint or url replaces the environment's endpoint entirely (the traces
 * variable included), so neither is left to win over it; an override's
 * headers are added to the environment's, winning for a header both name (in any
 * case), as the traces headers are added to the general ones: the variable usually
 * holds the credential, and code that adds `x-tenant` must not drop it.
 */
export function createOtlpSinkFromEnv(env: Record<string, string | undefined> = process.env, overrides: Partial<OtlpSinkOptions> = {}): OtlpSink {
  const tracesEndpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const endpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT) ?? DEFAULT_ENDPOINT;
  const timeoutVariable = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT) !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" : "OTEL_EXPORTER_OTLP_TIMEOUT";
  const timeout = nonEmpty(env[timeoutVariable]);
  const compressionVariable = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_COMPRESSION) !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION" : "OTEL_EXPORTER_OTLP_COMPRESSION";
  const compression = nonEmpty(env[compressionVariable]);
  const protocolVariable = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  checkProtocol(nonEmpty(env[protocolVariable]), protocolVariable);
  checkNoTlsFiles(env);
  const resourceAttributes = parseResourceAttributes(env.OTEL_RESOURCE_ATTRIBUTES);
  const overridesTarget = overrides.endpoint !== undefined || overrides.url !== undefined;
  // Checked here, so that an error names the variable the value came from.
  if (!overridesTarget) {
    if (tracesEndpoint !== undefined) tracesUrl(tracesEndpoint, { appendPath: false, source: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" });
    else tracesUrl(endpoint, { source: "OTEL_EXPORTER_OTLP_ENDPOINT" });
  }
  const envHeaders = withHeaders(parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS), parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"));
  const { headers: extraHeaders, ...otherOverrides } = overrides;
  return createOtlpSink(
    {
      // A traces endpoint is the full URL already; only the base endpoint gets /v1/traces.
      ...(overridesTarget ? {} : tracesEndpoint ? { url: tracesEndpoint } : { endpoint }),
      // Anything but a plain object goes to createOtlpSink as given, whose schema check refuses it.
      headers: isPlainObject(extraHeaders) ? withHeaders(envHeaders, extraHeaders) : (extraHeaders ?? envHeaders),
      ...(timeout !== undefined ? { timeoutMs: milliseconds(timeout, timeoutVariable) } : {}),
      ...(compression !== undefined ? { compression: compressionOf(compression, compressionVariable) } : {}),
      ...(Object.keys(resourceAttributes).length > 0 ? { resourceAttributes } : {}),
      // An override left undefined (an optional setting not given) leaves the environment's value in place.
      ...definedOnly(otherOverrides),
    },
  );
}

/** An HTTP header name: RFC 9110's token characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What a header value may hold here: visible ASCII, spaces and tabs (fetch refuses more than Latin-1, and collectors expect ASCII). */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/** `key=value` pairs separated by commas, values URL-decoded (the OTel specification's format). */
export function parseOtlpHeaders(text: string | undefined, variable = "OTEL_EXPORTER_OTLP_HEADERS"): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [index, pair] of (text ?? "").split(",").entries()) {
    if (pair.trim() === "") continue;
    // The variable holds secrets: an entry is named by its place, never quoted, not even its name
    // (`Authorization: Basic <base64>=` would make the credential the "name").
    const entry = `${variable}: entry ${index + 1} (of the comma-separated list)`;
    const at = pair.indexOf("=");
    const name = at > 0 ? pair.slice(0, at).trim() : "";
    if (!HEADER_NAME.test(name)) {
      throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `${entry} is not in key=value form with a header name of token characters${colonKey(pair)}`, {
        fix: `Write ${variable}="Authorization=Basic%20<base64>,x-tenant=acme": each header as name=value, the value URL-encoded (a space is %20).`,
      });
    }
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `${variable}: the value of ${name} is not valid URL encoding`, {
        fix: "Percent-encode special characters in header values (a space is %20).",
      });
    }
    if (!HEADER_VALUE.test(value)) {
      throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `${variable}: the value of ${name} has a character an HTTP header cannot carry (a line break, a control character, or one outside ASCII)`, {
        fix: "Give header values in printable ASCII; encode anything else as the backend expects (base64 for credentials).",
      });
    }
    headers[name] = value;
  }
  return headers;
}

/**
 * A hint for an entry written `name: value` (HTTP's form). Not even the name is
 * quoted: what stands before the colon may be a key too (`public_key:secret_key`).
 */
function colonKey(entry: string): string {
  const colon = entry.indexOf(":");
  const equals = entry.indexOf("=");
  return colon > 0 && (equals < 0 || colon < equals) ? "; it has a colon where the = belongs (write name=value, not name: value)" : "";
}

/** `general` with `specific` over it; names that differ only in case are one header (fetch would send both values joined). */
function withHeaders(general: Record<string, string>, specific: Record<string, string>): Record<string, string> {
  const overridden = new Set(Object.keys(specific).map((name) => name.toLowerCase()));
  return { ...Object.fromEntries(Object.entries(general).filter(([name]) => !overridden.has(name.toLowerCase()))), ...specific };
}

function isPlainObject(value: unknown): value is Record<string, string> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A timeout variable's value: a whole number of milliseconds, as the OpenTelemetry specification defines it. */
function milliseconds(text: string, variable: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_TIMER_MS) {
    throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `${variable} is ${JSON.stringify(text)}, not a whole number of milliseconds from 1 to ${MAX_TIMER_MS} (about 24.8 days)`, {
      fix: `Set ${variable} in milliseconds, e.g. ${variable}=10000 for ten seconds, or unset it for the default.`,
    });
  }
  return Number(text);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/**
 * The sink speaks OTLP/HTTP with JSON bodies. A collector set up for grpc (port 4317) or
 * http/protobuf would refuse every batch: such a setting is refused here instead of ignored.
 */
function checkProtocol(protocol: string | undefined, variable: string): void {
  if (protocol === undefined || protocol === "http/json") return;
  throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `${variable} is ${JSON.stringify(protocol)}; this sink sends OTLP over HTTP with JSON bodies (http/json) only`, {
    fix: `Point the endpoint at the collector's OTLP/HTTP receiver (port 4318 by default, which takes JSON) and set ${variable}=http/json, or leave it unset.`,
  });
}

/** The OpenTelemetry variables that name TLS files, general and traces-only. */
const TLS_FILE_VARIABLES = ["CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"].flatMap((name) => [`OTEL_EXPORTER_OTLP_${name}`, `OTEL_EXPORTER_OTLP_TRACES_${name}`]);

/**
 * The sink uses Node's default TLS (the system's CAs, no client certificate). A
 * collector behind a private CA or mTLS would refuse every batch: a TLS file set
 * for it is refused here instead of ignored.
 */
function checkNoTlsFiles(env: Record<string, string | undefined>): void {
  const variable = TLS_FILE_VARIABLES.find((name) => nonEmpty(env[name]) !== undefined);
  if (variable === undefined) return;
  throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `${variable} is set, but this sink does not load TLS files: it trusts the system's certificate authorities and sends no client certificate`, {
    fix: `Unset ${variable}; for a private CA start Node with NODE_EXTRA_CA_CERTS=<ca.pem>, and for mTLS send spans through a local OpenTelemetry Collector that holds the client certificate.`,
  });
}

/**
 * OTEL_RESOURCE_ATTRIBUTES: `key=value` pairs separated by commas, values
 * URL-decoded (the OpenTelemetry specification's format). A malformed list is
 * refused whole, as the specification asks that it not be used in part.
 */
function parseResourceAttributes(text: string | undefined, variable = "OTEL_RESOURCE_ATTRIBUTES"): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const [index, pair] of (text ?? "").split(",").entries()) {
    if (pair.trim() === "") continue;
    const at = pair.indexOf("=");
    const key = at > 0 ? pair.slice(0, at).trim() : "";
    if (key === "") {
      throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `${variable}: entry ${index + 1} (of the comma-separated list) is not in key=value form`, {
        fix: `Write ${variable}="deployment.environment=prod,k8s.pod.name=agent-1": each attribute as key=value, the value URL-encoded (a comma is %2C).`,
      });
    }
    try {
      attributes[decodeURIComponent(key)] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `${variable}: entry ${index + 1} (of the comma-separated list) is not valid URL encoding`, {
        fix: "Percent-encode special characters in keys and values (a comma is %2C, a percent sign %25).",
      });
    }
  }
  return attributes;
}

/** OTEL_EXPORTER_OTLP_COMPRESSION's values (the specification's, case as written there). */
function compressionOf(text: string, variable: string): "gzip" | "none" {
  if (text === "gzip" || text === "none") return text;
  throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `${variable} is ${JSON.stringify(text)}; OTLP/HTTP compression is gzip or none`, {
    fix: `Set ${variable}=gzip to compress request bodies, or none (or leave it unset) to send them as they are.`,
  });
}
