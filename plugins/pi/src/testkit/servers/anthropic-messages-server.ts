import { randomUUID } from "node:crypto";
import { ScriptedModelServer, sseEvent, type ProtocolRenderer, type RecordedRequest, type ScriptedError, type ScriptedStream } from "./scripted-server.js";

/**
 * Anthropic Messages (`POST /v1/messages`, `stream: true`) as documented: named
 * SSE events message_start, content_block_start / content_block_delta (text_delta,
 * input_json_delta) / content_block_stop, ping, message_delta (stop_reason and
 * cumulative output usage), message_stop. Requests need `x-api-key` and
 * `anthropic-version`; errors are `{ type: "error", error: { type, message } }`.
 */
export class AnthropicMessagesProtocol implements ProtocolRenderer {
  readonly endpoint = "/v1/messages";

  constructor(private readonly apiKey: string) {}

  commonHeaders(): Record<string, string> {
    return { "request-id": `req_${randomUUID().replace(/-/g, "").slice(0, 24)}`, "anthropic-organization-id": "org-scripted" };
  }

  refuse(request: RecordedRequest): ScriptedError | undefined {
    if (request.headers["x-api-key"] !== this.apiKey) return { kind: "error", status: 401, message: "invalid x-api-key" };
    if (!request.headers["anthropic-version"]) return { kind: "error", status: 400, message: "anthropic-version: header is required" };
    const body = request.body as { model?: unknown; max_tokens?: unknown; messages?: unknown } | undefined;
    if (!body || typeof body.model !== "string") return { kind: "error", status: 400, message: "model: Field required" };
    if (typeof body.max_tokens !== "number") return { kind: "error", status: 400, message: "max_tokens: Field required" };
    if (!Array.isArray(body.messages)) return { kind: "error", status: 400, message: "messages: Field required" };
    return undefined;
  }

  errorBody(error: ScriptedError): unknown {
    const type = ANTHROPIC_ERROR_TYPES[error.status] ?? (error.status >= 500 ? "api_error" : "invalid_request_error");
    return { type: "error", error: { type, message: error.message }, request_id: `req_${randomUUID().slice(0, 8)}` };
  }

  inStreamError(error: ScriptedError): string {
    return sseEvent("error", this.errorBody(error));
  }

  async stream(reply: ScriptedStream, request: RecordedRequest, emit: (frame: string, content?: boolean) => Promise<void>): Promise<unknown> {
    const usage = reply.usage ?? { inputTokens: 0, outputTokens: 0 };
    const startUsage = {
      input_tokens: usage.inputTokens,
      cache_creation_input_tokens: usage.cacheWriteTokens ?? 0,
      cache_read_input_tokens: usage.cacheReadTokens ?? 0,
      output_tokens: 1,
    };
    await emit(
      sseEvent("message_start", {
        type: "message_start",
        message: {
          id: `msg_${randomUUID().replace(/-/g, "").slice(0, 24)}`,
          type: "message",
          role: "assistant",
          model: (request.body as { model: string }).model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: startUsage,
        },
      }),
    );
    await emit(sseEvent("ping", { type: "ping" }));

    let index = 0;
    if (reply.text && reply.text.length > 0) {
      await emit(sseEvent("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } }));
      for (const text of reply.text) {
        await emit(sseEvent("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text } }), true);
      }
      await emit(sseEvent("content_block_stop", { type: "content_block_stop", index }));
      index += 1;
    }
    for (const call of reply.toolCalls ?? []) {
      await emit(sseEvent("content_block_start", { type: "content_block_start", index, content_block: { type: "tool_use", id: call.id, name: call.name, input: {} } }), true);
      // The API opens every tool_use block with an empty partial_json fragment.
      for (const part of ["", ...call.argumentChunks]) {
        await emit(sseEvent("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: part } }), true);
      }
      await emit(sseEvent("content_block_stop", { type: "content_block_stop", index }));
      index += 1;
    }

    const stop = reply.stop ?? ((reply.toolCalls ?? []).length > 0 ? "tool_use" : "end");
    const deltaUsage = { output_tokens: usage.outputTokens };
    await emit(
      sseEvent("message_delta", {
        type: "message_delta",
        delta: { stop_reason: { end: "end_turn", tool_use: "tool_use", max_tokens: "max_tokens" }[stop], stop_sequence: null },
        usage: deltaUsage,
      }),
    );
    await emit(sseEvent("message_stop", { type: "message_stop" }));
    return { ...startUsage, ...deltaUsage };
  }
}

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

/** Start a fake Anthropic server; its `baseUrl` is the origin, as the Anthropic SDK expects. */
export async function startAnthropicMessagesServer(options: { apiKey?: string } = {}): Promise<ScriptedModelServer & { baseUrl: string }> {
  const server = await new ScriptedModelServer(new AnthropicMessagesProtocol(options.apiKey ?? "sk-ant-test")).start();
  return Object.assign(server, { baseUrl: server.url });
}
