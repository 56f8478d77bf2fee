import { AssemblyLineError, type JsonValue } from "@assemblyline-agents/core";
import { readBounded, tooLarge } from "./response-limit.js";

/** A request body as sent: its Content-Type and its text. */
export interface RequestBody {
  contentType: string;
  text: string;
}

export interface PreparedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: RequestBody;
}

/** `value` as a JSON body (`mediaType`: the operation's own, such as application/merge-patch+json). */
export function jsonBody(value: unknown, mediaType = "application/json"): RequestBody {
  return { contentType: mediaType, text: JSON.stringify(value) };
}

/** Fill `{name}` path segments from the input; missing ones are an error the model can fix. */
export function fillPath(path: string, values: Record<string, unknown>): string | { error: string } {
  let problem: string | undefined;
  const filled = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined || value === null || value === "") problem ??= `path parameter "${name}" is required`;
    const segment = pathSegment(name, String(value ?? ""));
    if (typeof segment !== "string") problem ??= segment.error;
    return typeof segment === "string" ? segment : "";
  });
  return problem ? { error: problem } : filled;
}

/**
 * A path parameter's value as one URL path segment. `.` and `..` are refused: encodeURIComponent
 * leaves dots as they are and the URL parser folds such segments, so `..` would send the call, with
 * the connection's credentials, to another endpoint of the service than the tool's.
 */
export function pathSegment(name: string, value: string): string | { error: string } {
  if (value === "." || value === "..") return { error: `path parameter "${name}" is "${value}", which would leave the operation's path; pass the id or name itself` };
  return encodeURIComponent(value);
}

/**
 * Run `request` under the run's signal and the connection's timeout (reading
 * the body included), so a service that accepts and never answers fails the
 * call instead of holding the run.
 */
export async function withTimeout<T>(connection: string, doing: string, timeoutMs: number, signal: AbortSignal | undefined, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    return await request(signal ? AbortSignal.any([signal, timeout]) : timeout);
  } catch (error) {
    if (!timeout.aborted || signal?.aborted) throw error;
    throw new AssemblyLineError("AL_ERR_CONNECTION_FAILED", `connection "${connection}" did not answer ${doing} within ${timeoutMs} ms`, {
      fix: "Check the service is up and answering; raise createConnections({ requestTimeoutMs }) if it is only slow.",
    });
  }
}

/**
 * Send one request with the connection's fetch and shape the answer for the
 * model: `{ status, body }`, or `{ error, status, body }` for a non-2xx status
 * (a result the model can act on, not a failure of the run). A body past
 * `maxBytes` is not read further: the answer says so (`{ error, code, status }`).
 */
export async function send(fetchFn: typeof fetch, request: PreparedRequest, signal: AbortSignal, maxBytes: number): Promise<JsonValue> {
  const headers: Record<string, string> = { accept: "application/json", ...request.headers };
  if (request.body) headers["content-type"] = request.body.contentType;
  const response = await fetchFn(request.url, { method: request.method, headers, ...(request.body ? { body: request.body.text } : {}), signal });
  const text = await readBounded(response, maxBytes);
  if (text === undefined) {
    const url = new URL(request.url);
    return { ...tooLarge(`${request.method} ${url.origin}${url.pathname}`, maxBytes), status: response.status };
  }
  let parsed: JsonValue = text;
  if ((response.headers.get("content-type") ?? "").includes("json") && text !== "") {
    try {
      parsed = JSON.parse(text) as JsonValue;
    } catch {
      parsed = text;
    }
  }
  if (!response.ok) return { error: `HTTP ${response.status} from ${new URL(request.url).origin}`, status: response.status, body: parsed };
  return { status: response.status, body: parsed };
}
