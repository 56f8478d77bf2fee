import { AsyncLocalStorage } from "node:async_hooks";
import { subscribe } from "node:diagnostics_channel";

/** Status and headers of the last HTTP response a model call received. */
export interface ProviderResponse {
  status: number;
  headers: Record<string, string>;
}

interface Watch {
  last?: ProviderResponse;
}

/*
 * pi-ai reports a failed call as a message string; the status and `retry-after`
 * header it dropped are needed to retry correctly. Node's fetch (undici) publishes
 * every request on diagnostics channels, so we observe them there without touching
 * fetch. A request is tied to its watch when it is created, inside the caller's
 * async context; the response event itself can run in another request's context
 * (keep-alive sockets), so it is matched by request object, never by context.
 */
const currentWatch = new AsyncLocalStorage<Watch>();
/**
 * Model calls being watched now. An enabled AsyncLocalStorage makes Node run its
 * hooks for every promise the process creates, so it is disabled whenever no call
 * is watched: the runtime's work between model calls pays nothing for it.
 */
let watching = 0;
const watchOfRequest = new WeakMap<object, Watch>();
let subscribed = false;

function subscribeOnce(): void {
  if (subscribed) return;
  subscribed = true;
  subscribe("undici:request:create", (message) => {
    const watch = currentWatch.getStore();
    const request = (message as { request?: object }).request;
    if (watch && request) watchOfRequest.set(request, watch);
  });
  subscribe("undici:request:headers", (message) => {
    const { request, response } = message as { request?: object; response?: { statusCode?: number; headers?: unknown } };
    const watch = request ? watchOfRequest.get(request) : undefined;
    if (!watch || typeof response?.statusCode !== "number") return;
    watch.last = { status: response.statusCode, headers: headerRecord(response.headers) };
  });
}

/** Run `fn` and report the last HTTP response any fetch inside it received (undefined if none was seen). */
export async function watchProviderResponse<T>(fn: () => Promise<T>): Promise<{ value: T; response: ProviderResponse | undefined }> {
  subscribeOnce();
  const watch: Watch = {};
  watching += 1;
  try {
    const value = await currentWatch.run(watch, fn);
    return { value, response: watch.last };
  } finally {
    watching -= 1;
    if (watching === 0) currentWatch.disable();
  }
}

/** undici passes raw headers as a flat [name, value, name, value, ...] list of Buffers or strings. */
function headerRecord(raw: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  if (!Array.isArray(raw)) return headers;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    headers[String(raw[i]).toLowerCase()] = String(raw[i + 1]);
  }
  return headers;
}
