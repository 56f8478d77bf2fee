import { maxHeaderSize, type IncomingMessage, type ServerResponse } from "node:http";
import { AssemblyLineError, errorSummary, isAssemblyLineError, type ErrorCode, type JsonValue } from "@assemblyline-agents/core";

/** An error that already knows its HTTP status (and headers such as Retry-After). */
export class HttpError extends AssemblyLineError {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The message without the code prefix and fix suffix, for JSON bodies. */
  readonly reason: string;

  constructor(status: number, code: ErrorCode, reason: string, options: { fix?: string; headers?: Record<string, string>; cause?: unknown } = {}) {
    super(code, reason, { ...(options.fix ? { fix: options.fix } : {}), ...(options.cause ? { cause: options.cause } : {}) });
    this.status = status;
    this.headers = options.headers ?? {};
    this.reason = reason;
  }
}

/** The JSON body every error response carries. */
export interface ErrorBody {
  error: { code: string; message: string; fix?: string; requestId?: string };
}

/** Runtime errors an endpoint passes through, by the status that describes them. */
const STATUS_BY_CODE: Partial<Record<ErrorCode, number>> = {
  AL_ERR_RUN_NOT_FOUND: 404,
  AL_ERR_APPROVAL_NOT_FOUND: 404,
  AL_ERR_RUN_NOT_RESUMABLE: 409,
  AL_ERR_RUN_CAPACITY: 429,
  AL_ERR_STATE_INPUT_INVALID: 400,
  AL_ERR_STATE_UNAVAILABLE: 503,
  AL_ERR_STATE_LOCKED: 503,
};

/** State-store outages: 503 with Retry-After and a message that names no address. */
const STATE_OUTAGE_CODES: ReadonlySet<ErrorCode> = new Set(["AL_ERR_STATE_UNAVAILABLE", "AL_ERR_STATE_LOCKED"]);
export const STATE_OUTAGE_RETRY_AFTER_S = 5;

/** A client that went away mid-request (reset, aborted body): its business, not an endpoint failure. */
export function isClientAbort(error: unknown, req: { complete: boolean }): boolean {
  if (error instanceof HttpError) return false;
  const code = (error as { code?: unknown } | null)?.code;
  // Node's own error for a request whose connection closed before it was answered: the
  // body may have arrived whole (a stalled host reads request and hang-up at once).
  if (error instanceof Error && error.message === "aborted" && code === "ECONNRESET") return true;
  // Otherwise a complete request's reset is the handler's own (e.g. a database connection).
  if (req.complete) return false;
  return code === "ECONNRESET" || code === "ERR_STREAM_PREMATURE_CLOSE" || (error instanceof Error && error.message === "aborted");
}

/** Status, headers and body for any thrown value; unknown failures become a bare 500. */
export function errorResponse(error: unknown, requestId: string): { status: number; headers: Record<string, string>; body: ErrorBody } {
  if (error instanceof HttpError) {
    return { status: error.status, headers: error.headers, body: { error: { code: error.code, message: error.reason, ...(error.fix ? { fix: error.fix } : {}), requestId } } };
  }
  if (isAssemblyLineError(error) && STATE_OUTAGE_CODES.has(error.code)) {
    // The cause names the database (host, port, SQL): logged, never shown to the caller.
    return {
      status: 503,
      headers: { "retry-after": String(STATE_OUTAGE_RETRY_AFTER_S) },
      body: { error: { code: error.code, message: "the state store is unavailable; retry later", fix: `Retry after ${STATE_OUTAGE_RETRY_AFTER_S} s; operators: look up requestId ${requestId} in the host's logs.`, requestId } },
    };
  }
  if (isAssemblyLineError(error) && STATUS_BY_CODE[error.code] !== undefined) {
    const reason = errorSummary(error);
    const retryAfterMs = (error as { retryAfterMs?: unknown }).retryAfterMs;
    const headers: Record<string, string> = typeof retryAfterMs === "number" ? { "retry-after": String(retryAfterSeconds(retryAfterMs)) } : {};
    return { status: STATUS_BY_CODE[error.code]!, headers, body: { error: { code: error.code, message: reason, ...(error.fix ? { fix: error.fix } : {}), requestId } } };
  }
  return {
    status: 500,
    headers: {},
    body: { error: { code: "AL_ERR_HOST_INTERNAL", message: "the endpoint failed unexpectedly", fix: `Look up requestId ${requestId} in the host's logs (event http.failed).`, requestId } },
  };
}

/** What a `clientError` from Node's HTTP server carries: llhttp's code (HPE_*) and reason, or Node's own code. */
export interface ClientError {
  code?: string;
  reason?: string;
}

/**
 * Status and JSON body for a request Node's HTTP parser refused before any route saw it (the
 * server's "clientError"): the same error shape every other refusal has, so a client reads one.
 */
export function clientErrorResponse(error: ClientError, requestId: string, limits: { requestTimeoutMs: number; headersTimeoutMs: number }): { status: number; body: ErrorBody } {
  const answer = (status: number, code: ErrorCode, message: string, fix: string) => ({ status, body: { error: { code, message, fix, requestId } } });
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return answer(431, "AL_ERR_HTTP_HEADERS_TOO_LARGE", `the request's headers exceed ${maxHeaderSize} bytes`, "Send fewer or shorter headers (cookies, long tokens); the limit is Node's --max-http-header-size.");
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return answer(413, "AL_ERR_HTTP_BODY_TOO_LARGE", "the chunked body's chunk extensions are larger than Node allows", "Send the body without chunk extensions, or with a Content-Length.");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return answer(
        408,
        "AL_ERR_HTTP_REQUEST_TIMEOUT",
        `the request did not arrive in time: headers take at most ${limits.headersTimeoutMs} ms, the whole request ${limits.requestTimeoutMs} ms`,
        "Send the whole request without pausing, or raise listenNodeRuntime({ requestTimeoutMs, headersTimeoutMs }) (ASSEMBLY_LINE_REQUEST_TIMEOUT_MS, ASSEMBLY_LINE_HEADERS_TIMEOUT_MS).",
      );
    default: {
      // llhttp's reasons are its own fixed texts ("Invalid header value char"), never the caller's bytes.
      const reason = typeof error.reason === "string" && error.reason !== "" ? `: ${error.reason.slice(0, 100)}` : "";
      return answer(400, "AL_ERR_HTTP_MALFORMED", `the request is not HTTP/1.1 this host can read${reason}`, "Send a well-formed HTTP/1.1 request: a request line, then one \"Name: value\" header a line, each line ended by CRLF.");
    }
  }
}

/** The origin request targets are read against: routing looks at the path and query only. */
const PLACEHOLDER_ORIGIN = "http://host.invalid";

/**
 * The request target as a URL, for its path and query. An origin-form target ("/path?q") is a path
 * whatever follows its first slash: read against the base URL, "//x/admin" would be the host x and
 * the path /admin. An absolute-form target (what a client talking to a proxy sends) gives its path
 * and query; anything else, or a target no URL parser takes, is the caller's error, a 400.
 */
export function requestTarget(target: string | undefined): URL {
  const raw = target ?? "/";
  try {
    if (raw.startsWith("/")) return new URL(`${PLACEHOLDER_ORIGIN}${raw}`);
    const absolute = new URL(raw);
    if (absolute.protocol === "http:" || absolute.protocol === "https:") return new URL(`${PLACEHOLDER_ORIGIN}${absolute.pathname}${absolute.search}`);
  } catch {
    // Refused below, as every other target that is not a path.
  }
  throw new HttpError(400, "AL_ERR_HTTP_TARGET_INVALID", "the request target is not a path this host can read", {
    fix: "Send an origin-form request target such as /message or /runs/<id>.",
  });
}

/** Retry-After is whole seconds; never advertise 0, which invites a hot retry loop. */
/** The longest Retry-After sent: a year. A limit that never refills would otherwise say "Infinity" or "1e+21", which no client reads as a delay. */
const MAX_RETRY_AFTER_S = 365 * 86_400;

/** Retry-After's delay-seconds (a whole number, at least 1) for a wait in ms. */
export function retryAfterSeconds(ms: number): number {
  if (Number.isNaN(ms)) return MAX_RETRY_AFTER_S;
  return Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(ms / 1000)));
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(text)) });
  res.end(text);
}

/** The pause limit of a body the host set none for (`limitBodyIdle`), and the host's default (`bodyIdleTimeoutMs`). */
export const DEFAULT_BODY_IDLE_TIMEOUT_MS = 10_000;

/**
 * The host's pause limit of each request's body, set as the request arrives so that every
 * route reading a body (channels, decisions, the kill switch) keeps the host's setting.
 */
const bodyIdleLimits = new WeakMap<IncomingMessage, number>();

/** Let `req`'s body pause at most `ms` between two pieces while it is read (`readBody`). */
export function limitBodyIdle(req: IncomingMessage, ms: number): void {
  bodyIdleLimits.set(req, ms);
}

/**
 * Read the whole body, refusing (413) beyond `maxBytes`: the declared
 * Content-Length is checked before reading a byte, the streamed size as it arrives.
 * A body that pauses longer than `idleMs` between two pieces is refused with 408: a
 * caller, authenticated or not, must not hold the connection by sending it slowly.
 */
export async function readBody(req: IncomingMessage, maxBytes: number, idleMs = bodyIdleLimits.get(req) ?? DEFAULT_BODY_IDLE_TIMEOUT_MS): Promise<Buffer> {
  const tooLarge = () =>
    new HttpError(413, "AL_ERR_HTTP_BODY_TOO_LARGE", `the request body exceeds ${maxBytes} bytes`, {
      fix: "Send a smaller body, or raise listenNodeRuntime({ maxBodyBytes }).",
    });
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
  const framedByLength = Number.isFinite(declared) && req.headers["transfer-encoding"] === undefined;
  if (framedByLength && req.readableLength === declared && req.readableFlowing === null && !req.destroyed) {
    // A small body usually arrives with its headers: once every declared byte waits in the stream's
    // buffer, it is taken at once, without the listeners and promise below (the stream ends on its own).
    // Only for a body framed by its Content-Length: with a Transfer-Encoding (which a lenient parser
    // may accept beside it), the declared length need not be the body's.
    return declared === 0 ? Buffer.alloc(0) : (req.read() as Buffer);
  }
  // Events rather than `for await`: an async iterator per request costs more than the small bodies it reads.
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stalled = () => {
      cleanup();
      // The rest is not waited for: the caller answers 408 and closes the connection.
      req.pause();
      reject(
        new HttpError(408, "AL_ERR_HTTP_BODY_TIMEOUT", `the request body stopped arriving: nothing came for ${idleMs} ms`, {
          fix: "Send the whole body without pausing, or raise listenNodeRuntime({ bodyIdleTimeoutMs }).",
        }),
      );
    };
    const idle = setTimeout(stalled, idleMs).unref();
    const cleanup = () => {
      clearTimeout(idle);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      idle.refresh();
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        // The rest is not read: the caller answers 413 and closes the connection.
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    // The connection closed before the body was read to its end (also when it did so before we looked).
    const aborted = () => req.errored ?? Object.assign(new Error("aborted"), { code: "ECONNRESET" });
    const onClose = () => {
      cleanup();
      reject(aborted());
    };
    if (req.destroyed) {
      cleanup();
      reject(aborted());
      return;
    }
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

export function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  const type = header.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

/**
 * Parse a JSON object body. An empty body is `{}` when `optional` (e.g. an
 * approve without options); otherwise the body must be JSON with a JSON type.
 */
export function parseJsonObject(req: IncomingMessage, raw: Buffer, options: { optional?: boolean } = {}): Record<string, JsonValue> {
  if (raw.length === 0 && options.optional) return {};
  if (!isJsonContentType(req.headers["content-type"])) {
    throw new HttpError(415, "AL_ERR_HTTP_CONTENT_TYPE", `Content-Type ${JSON.stringify(req.headers["content-type"] ?? "")} is not application/json`, {
      fix: "Send the body with Content-Type: application/json.",
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString("utf8"));
  } catch (error) {
    throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `the body is not valid JSON: ${(error as Error).message}`, { fix: "Send a JSON object." });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", "the body must be a JSON object", { fix: 'Send e.g. {"message": "hi"}.' });
  }
  return parsed as Record<string, JsonValue>;
}

/** An optional string field of a parsed body (400 when present with another type). */
export function optionalString(body: Record<string, JsonValue>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `body.${field} must be a string`, { fix: `Send "${field}" as a JSON string, or leave it out.` });
  }
  return value;
}

/**
 * Refuse (400) a body field the route does not read: a misspelt `callId` would otherwise be
 * dropped, and the decision applied to whatever waits now.
 */
export function refuseUnknownFields(body: Record<string, JsonValue>, known: readonly string[], example: string): void {
  const unknown = Object.keys(body).find((field) => !known.includes(field));
  if (unknown !== undefined) {
    throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `body.${unknown} is not a field of this request (it takes ${known.join(", ")})`, {
      fix: `Send only those fields, e.g. ${example}.`,
    });
  }
}

export function requiredString(body: Record<string, JsonValue>, field: string, example: string): string {
  const value = optionalString(body, field);
  if (value === undefined || value === "") {
    throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `body.${field} is required`, { fix: `Send e.g. ${example}.` });
  }
  return value;
}

/** Request headers as a plain record (arrays joined), as channel modules receive them. */
export function headerRecord(req: IncomingMessage): Record<string, string | undefined> {
  const given = req.headers;
  const headers: Record<string, string | undefined> = {};
  // A for-in over the own keys, without the entry pairs Object.entries would make.
  for (const name in given) {
    if (!Object.hasOwn(given, name)) continue;
    const value = given[name];
    headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}
