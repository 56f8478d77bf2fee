/**
 * How much of a service's answer reaches the model: an HTTP or OpenAPI
 * response body, an MCP tool result. Past the limit the call answers an error
 * the model can act on (ask for less) instead of filling memory and context.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/** The result a call answers when `what` was larger than `maxBytes`. */
export function tooLarge(what: string, maxBytes: number): { error: string; code: string } {
  return {
    error: `${what} answered more than ${maxBytes} bytes (the connections' maxResponseBytes), so its answer was dropped; ask for less (a filter, a smaller page or range), or have the host raise createConnections({ maxResponseBytes })`,
    code: "AL_ERR_CONNECTION_FAILED",
  };
}

/**
 * The body as text, or undefined once it is longer than `maxBytes`: reading
 * stops there (a declared Content-Length past it is not read at all), so a
 * service answering gigabytes costs at most `maxBytes` of memory.
 */
export async function readBounded(response: Response, maxBytes: number): Promise<string | undefined> {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  // TextDecoder as Response.text() decodes: UTF-8, a leading BOM dropped.
  return new TextDecoder().decode(Buffer.concat(chunks, total));
}
