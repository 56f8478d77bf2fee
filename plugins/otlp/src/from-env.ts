import { AssemblyLineError } from "@assemblyline-agents/core";
import type { OtlpSinkOptions } from "./options.js";
import { createOtlpSink, type OtlpSink } from "./sink.js";

const DEFAULT_ENDPOINT = "http://localhost:4318";

/**
 * The sink the standard OpenTelemetry variables describe:
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or OTEL_EXPORTER_OTLP_ENDPOINT
 * (+ /v1/traces, default http://localhost:4318), OTEL_EXPORTER_OTLP_HEADERS and
 * OTEL_EXPORTER_OTLP_TIMEOUT. Explicit options win over the environment.
 */
export function createOtlpSinkFromEnv(env: Record<string, string | undefined> = process.env, overrides: Partial<OtlpSinkOptions> = {}): OtlpSink {
  const tracesEndpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const endpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT) ?? DEFAULT_ENDPOINT;
  const timeout = nonEmpty(env.OTEL_EXPORTER_OTLP_TIMEOUT);
  return createOtlpSink(
    {
      // A traces endpoint is the full URL already; only the base endpoint gets /v1/traces.
      ...(tracesEndpoint ? { url: tracesEndpoint } : { endpoint }),
      headers: parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
      ...(timeout !== undefined ? { timeoutMs: Number(timeout) } : {}),
      ...overrides,
    },
  );
}

/** `key=value` pairs separated by commas, values URL-decoded (the OTel specification's format). */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    if (pair.trim() === "") continue;
    const at = pair.indexOf("=");
    const name = at > 0 ? pair.slice(0, at).trim() : "";
    if (name === "") {
      throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `OTEL_EXPORTER_OTLP_HEADERS has an entry without a key=value form (${JSON.stringify(pair.trim().slice(0, 20))}…)`, {
        fix: 'Write OTEL_EXPORTER_OTLP_HEADERS="Authorization=Basic%20<base64>,x-tenant=acme".',
      });
    }
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `OTEL_EXPORTER_OTLP_HEADERS: the value of ${name} is not valid URL encoding`, {
        fix: "Percent-encode special characters in header values (a space is %20).",
      });
    }
    headers[name] = value;
  }
  return headers;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}
