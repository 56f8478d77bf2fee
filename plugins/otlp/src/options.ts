import { AssemblyLineError, quotableUrl, quotedUrl } from "@assemblyline-agents/core";
import { checkOtlpOptions } from "./config-schema.js";

export interface OtlpSinkOptions {
  /** OTLP/HTTP base URL, e.g. https://cloud.langfuse.com/api/public/otel; `/v1/traces` is appended unless the URL already ends with it. */
  endpoint?: string;
  /** The full traces URL, used as is (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); instead of endpoint. */
  url?: string;
  /** Sent with every request, e.g. `{ Authorization: "Basic ..." }`. */
  headers?: Record<string, string>;
  /** Spans per request (default 512). */
  maxBatchSize?: number;
  /** Spans held while the backend is slow or down; beyond it new spans are dropped and counted (default 2048). */
  maxQueueSize?: number;
  /** How long a partial batch waits for more spans before it is sent (default 1000 ms). */
  scheduledDelayMs?: number;
  /** One batch's time limit, every try and backoff included, as OTEL_EXPORTER_OTLP_TIMEOUT means it (default 10000 ms). */
  timeoutMs?: number;
  /** Tries per batch on 429, 502, 503, 504 and network errors, within timeoutMs, before it is dropped (default 5). */
  maxAttempts?: number;
  /** First retry delay, doubled per attempt with jitter, capped by maxBackoffMs; Retry-After wins when sent (defaults 500 / 30000 ms). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** How request bodies are encoded: `gzip` (sent with Content-Encoding: gzip) or `none` (default), as OTEL_EXPORTER_OTLP_COMPRESSION says it. */
  compression?: "gzip" | "none";
  /** Added to every span's resource (deployment.environment, k8s.pod.name, ...), under the runtime's own attributes, which win (service.name, service.version). */
  resourceAttributes?: Record<string, string>;
  /** Where dropped or refused batches are reported (default: one JSON line on stderr). */
  onWarning?(message: string, fields: Record<string, unknown>): void;
}

export type ResolvedOtlpOptions = Required<Omit<OtlpSinkOptions, "onWarning" | "endpoint" | "url">> & Pick<OtlpSinkOptions, "onWarning"> & { url: string };

const DEFAULTS = { maxBatchSize: 512, maxQueueSize: 2048, scheduledDelayMs: 1000, timeoutMs: 10_000, maxAttempts: 5, initialBackoffMs: 500, maxBackoffMs: 30_000, compression: "none" as const, resourceAttributes: {} };

export function resolveOtlpOptions(options: OtlpSinkOptions): ResolvedOtlpOptions {
  // Limits and headers are checked by config.schema.json; the URL's form, and onWarning (no JSON type), here.
  checkOtlpOptions(options);
  if (options?.onWarning !== undefined && typeof options.onWarning !== "function") {
    throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `createOtlpSink: onWarning is ${typeof options.onWarning}, not a function`, {
      fix: "Pass onWarning(message, fields) as a function, or leave it out for one JSON line on stderr per warning.",
    });
  }
  const url = options?.url !== undefined ? tracesUrl(options.url, { appendPath: false }) : tracesUrl(options?.endpoint);
  const { endpoint: _endpoint, url: _url, ...rest } = definedOnly(options ?? {});
  const resolved = { ...DEFAULTS, ...rest, headers: { ...(options.headers ?? {}) }, resourceAttributes: { ...(options.resourceAttributes ?? {}) }, url };
  if (resolved.maxBatchSize > resolved.maxQueueSize) {
    // The queue would never hold a full batch: spans wait for the delay, and those past the queue are dropped with a healthy backend.
    const given = (name: "maxBatchSize" | "maxQueueSize") => `${name} ${resolved[name]}${rest[name] === undefined ? " (the default)" : ""}`;
    throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `createOtlpSink: ${given("maxBatchSize")} is larger than ${given("maxQueueSize")}; a batch could never fill, and spans past the queue would be dropped however healthy the backend`, {
      fix: `Give maxQueueSize at least maxBatchSize (${resolved.maxBatchSize}), a few batches' worth, or a maxBatchSize of at most ${resolved.maxQueueSize}.`,
    });
  }
  return resolved;
}

/**
 * Where an endpoint came from, named in its errors: a variable of
 * createOtlpSinkFromEnv's, or an option of createOtlpSink's.
 */
export type OtlpEndpointSource = "OTEL_EXPORTER_OTLP_ENDPOINT" | "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" | "endpoint" | "url";

/**
 * The URL spans are posted to: the base endpoint plus the OTLP traces path
 * (`appendPath: false` for a full traces URL). An endpoint is not secret, so
 * errors quote its scheme, host and path, but never its user name or password,
 * query or fragment (each may hold a key); one too malformed to tell them apart
 * is not quoted at all.
 */
export function tracesUrl(endpoint: string | undefined, { appendPath = true, source = appendPath ? "endpoint" : "url" }: { appendPath?: boolean; source?: OtlpEndpointSource } = {}): string {
  const named = source.startsWith("OTEL_") ? source : `createOtlpSink's ${source} option`;
  const setTo = (example: string) => (source.startsWith("OTEL_") ? `Set ${source}=${example}` : `Pass createOtlpSink({ ${source}: "${example}" })`);
  const example = appendPath ? "http://localhost:4318" : "http://localhost:4318/v1/traces";
  if (endpoint === undefined) {
    throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", "createOtlpSink has neither endpoint nor url", { fix: `Pass createOtlpSink({ endpoint: "${example}" }), or use createOtlpSinkFromEnv(env) for the OTEL_EXPORTER_OTLP_* variables.` });
  }
  const safe = quotableUrl(endpoint);
  const shown = quotedUrl(endpoint);
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(endpoint) && !/^https?:/i.test(endpoint)) {
    // new URL("localhost:4318") parses, as scheme "localhost:": say what is missing instead.
    const withScheme = safe === undefined || safe.hidden ? "http://<host>:<port>" : `http://${safe.text.replace(/^\/+/, "")}`;
    throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `OTLP endpoint ${shown} is not a URL: it has no http:// or https:// scheme (${named})`, {
      fix: `${setTo(withScheme)}, or https:// for a collector behind TLS${safe?.hidden ? "; credentials go in a header (OTEL_EXPORTER_OTLP_HEADERS or the headers option), not the URL" : ""}.`,
    });
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `OTLP endpoint ${shown} is not a URL (${named})`, { fix: `${setTo(example)}: an http(s) URL.` });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `OTLP endpoint ${shown} uses ${url.protocol}; OTLP/HTTP needs http: or https: (${named})`, {
      fix: `${setTo(example)}: the collector's OTLP/HTTP address (port 4318 by default), not its gRPC one (4317).`,
    });
  }
  if (url.username !== "" || url.password !== "") {
    // fetch refuses a URL with credentials: every batch would fail, and the URL would be in each warning.
    throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `OTLP endpoint ${url.origin} carries a user name or password in its URL (${named})`, {
      fix: 'Take them out of the URL and send them as a header: createOtlpSink({ headers: { authorization: "Basic <base64 of user:password>" } }) or OTEL_EXPORTER_OTLP_HEADERS.',
    });
  }
  if (url.pathname.includes("@")) {
    // "user:1234/secret@host" parses as host "user", port 1234: spans would go there, and warnings quote that origin.
    throw new AssemblyLineError("AL_ERR_OTLP_CONFIG", `OTLP endpoint ${shown} has an @ in its path, as a user name and password with a / in them would (${named})`, {
      fix: 'Take credentials out of the URL and send them as a header: createOtlpSink({ headers: { authorization: "Basic <base64 of user:password>" } }) or OTEL_EXPORTER_OTLP_HEADERS.',
    });
  }
  if (appendPath && !url.pathname.endsWith("/v1/traces")) url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`;
  return url.toString();
}

/** `value` without its undefined fields: an option left undefined is one not given, and sets no default or variable aside. */
export function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, item]) => item !== undefined)) as Partial<T>;
}
