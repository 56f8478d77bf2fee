import { readBounded } from "./response-limit.js";

/** How much of a refusal's body (a 4xx or 5xx answer to a request) is read for its error message. */
export const REFUSAL_BYTES = 4 * 1024;

/** Marks the JSON-RPC error a capped answer is replaced with, so the caller can tell it from the server's own. */
export const ANSWER_CAP_MARK = "assembly-line/answer-too-large";

/**
 * How many bytes of one MCP answer (the body of the POST that carried a request) are read at
 * most, for a tool result limited to `maxResultBytes` once parsed: room for JSON's escapes (a
 * character may take six bytes as `\uXXXX`) and the envelope, so a result the parsed check
 * would pass is never cut.
 */
export function answerCap(maxResultBytes: number): number {
  return maxResultBytes * 6 + 64 * 1024;
}

/**
 * An MCP connection's fetch whose answers to requests are read up to `maxBytes`: the SDK would
 * otherwise hold a whole answer (a JSON body, or an SSE event still open) however large. Past
 * it the rest is never read and the SDK gets, in the same wire format, a JSON-RPC error for each
 * request the POST carried (`data` holding ANSWER_CAP_MARK), so the call fails at once instead of
 * waiting for a response that will never come. Any other SSE stream (the session's GET stream)
 * ends after `maxBytes`, which the SDK opens again; other answers pass as they are. Once an answer
 * to a request was cut, the client is dropped (McpClients): from then on a request to resume a
 * stream (GET with Last-Event-ID) is answered 405 here, unsent, so the cut answer is never read on.
 */
export function cappedAnswers(fetchFn: typeof fetch, maxBytes: number): typeof fetch {
  /** An answer to a request was cut. */
  let cut = false;
  return (async (input: string | URL | Request, init?: RequestInit) => {
    // The SDK resumes a cut SSE answer whose events carry ids about a second later, and calls of
    // other runs may keep the dropped client that long. 405 is a server's "no stream here": the SDK
    // asks no more.
    if (cut && resumes(init)) return new Response(null, { status: 405 });
    const response = await fetchFn(input, init);
    if (response.body === null) return response;
    const ids = requestIds(init);
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    const answer = (body: string | ReadableStream<Uint8Array>) => new Response(body, { status: response.status, statusText: response.statusText, headers });
    // The session's stream (GET) and any other: ended after maxBytes, so no event grows without end
    // (the SDK opens the session's stream again).
    if (ids.length === 0) return type === "text/event-stream" ? answer(cutStream(response.body, maxBytes, [])) : response;
    // A refusal's body is read whole into the error's message, which reaches the model: its start says enough.
    if (!response.ok) return answer(cutStream(response.body, REFUSAL_BYTES, []));
    if (type === "text/event-stream") return answer(cutStream(response.body, maxBytes, ids, () => (cut = true)));
    const text = await readBounded(response, maxBytes);
    if (text === undefined) cut = true;
    return answer(text ?? JSON.stringify(ids.length === 1 ? capErrorFor(ids[0]!, maxBytes) : ids.map((id) => capErrorFor(id, maxBytes))));
  }) as typeof fetch;
}

/** A body's first `maxBytes`; then, for an SSE answer to `ids`, an end to any event cut short and one error event per request (and `cutting` called); then no more. */
function cutStream(body: ReadableStream<Uint8Array>, maxBytes: number, ids: Array<string | number>, cutting?: () => void): ReadableStream<Uint8Array> {
  let read = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        read += chunk.byteLength;
        if (read <= maxBytes) return controller.enqueue(chunk);
        const room = maxBytes - (read - chunk.byteLength);
        if (room > 0) controller.enqueue(chunk.subarray(0, room));
        if (ids.length > 0) {
          cutting?.();
          const events = ids.map((id) => `event: message\ndata: ${JSON.stringify(capErrorFor(id, maxBytes))}\n\n`).join("");
          controller.enqueue(new TextEncoder().encode(`\n\n${events}`));
        }
        // Ends what reaches the SDK and cancels the rest of the server's stream.
        controller.terminate();
      },
    }),
  );
}

/** The JSON-RPC error that takes the place of the answer to request `id` when it was cut past `maxBytes`. */
export function capErrorFor(id: string | number, maxBytes: number) {
  return { jsonrpc: "2.0", id, error: { code: -32000, message: `the server's answer was longer than ${maxBytes} bytes, so it was not read`, data: { [ANSWER_CAP_MARK]: maxBytes } } };
}

/** The ids of the JSON-RPC requests a POST carries (the SDK sends its body as a JSON string). */
function requestIds(init: RequestInit | undefined): Array<string | number> {
  if ((init?.method ?? "GET").toUpperCase() !== "POST" || typeof init?.body !== "string") return [];
  try {
    const parsed: unknown = JSON.parse(init.body);
    return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((message) =>
      typeof message === "object" && message !== null && "method" in message && "id" in message && (typeof message.id === "string" || typeof message.id === "number") ? [message.id] : [],
    );
  } catch {
    return [];
  }
}

/** A GET asking to resume a stream after an event (Last-Event-ID). */
function resumes(init: RequestInit | undefined): boolean {
  return (init?.method ?? "GET").toUpperCase() === "GET" && new Headers(init?.headers).has("last-event-id");
}
