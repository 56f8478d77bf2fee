import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { capErrorFor } from "./mcp-answer-cap.js";

/**
 * A stdio MCP server's answers capped as cappedAnswers caps an HTTP server's. The SDK's stdio
 * transport, created with `maxBufferSize: maxBytes`, buffers at most that much of a line the
 * server has not ended, then reports an error and stops the server (a line that never ends would
 * otherwise grow without bound, and the SDK's own default of 10 MB would cut answers the host's
 * `maxResponseBytes` allows). Each request still waiting then gets, before the stop fails it as
 * "connection closed", the JSON-RPC error a cut HTTP answer gets, so its call answers the usual
 * too-large result. The line's request cannot be told from another's, so every call in flight on
 * that server gets it; the next use starts the server again.
 *
 * Call before `client.connect(transport)`: the client keeps and calls what is set here.
 */
export function capStdioAnswers(transport: Transport, maxBytes: number): void {
  const waiting = new Set<string | number>();
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if ("method" in message && "id" in message) waiting.add(message.id);
    // A request the client gave up on (its timeout, an abort) is answered by no one.
    if ("method" in message && message.method === "notifications/cancelled") waiting.delete(cancelledId(message));
    return send(message, options);
  };
  transport.onmessage = (message: JSONRPCMessage) => {
    if (!("method" in message) && "id" in message && message.id !== undefined) waiting.delete(message.id);
  };
  transport.onerror = (error: Error) => {
    if (!isOverflow(error)) return;
    const answered = [...waiting];
    waiting.clear();
    for (const id of answered) transport.onmessage?.(capErrorFor(id, maxBytes) as JSONRPCMessage);
  };
}

/** The error the SDK's ReadBuffer throws past its maxBufferSize (@modelcontextprotocol/sdk/shared/stdio). */
function isOverflow(error: Error): boolean {
  return error.message.startsWith("ReadBuffer exceeded maximum size");
}

function cancelledId(message: JSONRPCMessage): string | number {
  const params = "params" in message ? (message.params as { requestId?: unknown } | undefined) : undefined;
  const id = params?.requestId;
  return typeof id === "string" || typeof id === "number" ? id : "";
}
