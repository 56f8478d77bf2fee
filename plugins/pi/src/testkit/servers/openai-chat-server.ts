import { randomUUID } from "node:crypto";
import { ScriptedModelServer, sseData, type ProtocolRenderer, type RecordedRequest, type ScriptedError, type ScriptedStream } from "./scripted-server.js";

/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`, `stream: true`) as
 * documented: `chat.completion.chunk` objects as `data:` SSE frames, tool-call
 * argument fragments under `delta.tool_calls[].function.arguments`, a final
 * usage-only chunk when `stream_options.include_usage` is set, then `data: [DONE]`.
 * Errors are `{ error: { message, type, param, code } }`.
 */
export class OpenAIChatProtocol implements ProtocolRenderer {
  readonly endpoint = "/v1/chat/completions";

  constructor(private readonly apiKey: string) {}

  commonHeaders(): Record<string, string> {
    return { "x-request-id": `req_${randomUUID().replace(/-/g, "")}`, "openai-processing-ms": "12", "openai-version": "2020-10-01" };
  }

  refuse(request: RecordedRequest): ScriptedError | undefined {
    if (request.headers.authorization !== `Bearer ${this.apiKey}`) {
      return { kind: "error", status: 401, message: "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys." };
    }
    const body = request.body as { model?: unknown; messages?: unknown; stream?: unknown } | undefined;
    if (!body || typeof body.model !== "string" || !Array.isArray(body.messages)) {
      return { kind: "error", status: 400, message: "'messages' and 'model' are required properties." };
    }
    if (body.stream !== true) return { kind: "error", status: 400, message: "This scripted server only streams; set stream: true." };
    return undefined;
  }

  errorBody(error: ScriptedError): unknown {
    const [type, code] = OPENAI_ERROR_TYPES[error.status] ?? (error.status >= 500 ? ["server_error", null] : ["invalid_request_error", null]);
    return { error: { message: error.message, type, param: null, code } };
  }

  inStreamError(error: ScriptedError): string {
    return sseData(this.errorBody(error));
  }

  async stream(reply: ScriptedStream, request: RecordedRequest, emit: (frame: string, content?: boolean) => Promise<void>): Promise<unknown> {
    const body = request.body as { model: string; stream_options?: { include_usage?: boolean } };
    const includeUsage = body.stream_options?.include_usage === true;
    const base = { id: `chatcmpl-${randomUUID().slice(0, 12)}`, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model: body.model, system_fingerprint: "fp_scripted" };
    const chunk = (delta: object, finishReason: string | null = null): object => ({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    });

    await emit(sseData(chunk({ role: "assistant", content: "", refusal: null })));
    for (const text of reply.text ?? []) await emit(sseData(chunk({ content: text })), true);
    for (const [index, call] of (reply.toolCalls ?? []).entries()) {
      await emit(sseData(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] })), true);
      for (const part of call.argumentChunks) {
        await emit(sseData(chunk({ tool_calls: [{ index, function: { arguments: part } }] })), true);
      }
    }
    const stop = reply.stop ?? ((reply.toolCalls ?? []).length > 0 ? "tool_use" : "end");
    await emit(sseData(chunk({}, { end: "stop", tool_use: "tool_calls", max_tokens: "length" }[stop])));

    let usageSent: unknown;
    if (includeUsage) {
      const usage = reply.usage ?? { inputTokens: 0, outputTokens: 0 };
      const cached = usage.cacheReadTokens ?? 0;
      usageSent = {
        prompt_tokens: usage.inputTokens + cached + (usage.cacheWriteTokens ?? 0),
        completion_tokens: usage.outputTokens,
        total_tokens: usage.inputTokens + cached + (usage.cacheWriteTokens ?? 0) + usage.outputTokens,
        prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      };
      await emit(sseData({ ...base, choices: [], usage: usageSent }));
    }
    await emit(sseData("[DONE]"));
    return usageSent;
  }
}

const OPENAI_ERROR_TYPES: Record<number, [string, string | null]> = {
  400: ["invalid_request_error", null],
  401: ["invalid_request_error", "invalid_api_key"],
  403: ["invalid_request_error", "unsupported_country_region_territory"],
  404: ["invalid_request_error", "model_not_found"],
  429: ["requests", "rate_limit_exceeded"],
  500: ["server_error", null],
  503: ["server_error", "service_unavailable"],
};

/** Start a fake OpenAI-compatible server; its `baseUrl` ends in `/v1` like Ollama's and vLLM's. */
export async function startOpenAIChatServer(options: { apiKey?: string } = {}): Promise<ScriptedModelServer & { baseUrl: string }> {
  const server = await new ScriptedModelServer(new OpenAIChatProtocol(options.apiKey ?? "sk-test-openai")).start();
  return Object.assign(server, { baseUrl: `${server.url}/v1` });
}
