import { randomUUID } from "node:crypto";
import { ScriptedModelServer, sseEvent, type ProtocolRenderer, type RecordedRequest, type ScriptedError, type ScriptedStream } from "../../src/testkit/servers/index.js";

/**
 * OpenAI's Responses API (`POST /v1/responses`, `stream: true`), as much as a
 * text reply needs: `response.created`, one message item whose text arrives as
 * `response.output_text.delta` events (the content events), then the item's
 * `done` events and `response.completed` with the usage. What the catalog's
 * `openai/*` models speak.
 */
class OpenAIResponsesProtocol implements ProtocolRenderer {
  readonly endpoint = "/v1/responses";

  constructor(private readonly apiKey: string) {}

  commonHeaders(): Record<string, string> {
    return { "x-request-id": `req_${randomUUID().replace(/-/g, "")}` };
  }

  refuse(request: RecordedRequest): ScriptedError | undefined {
    if (request.headers.authorization !== `Bearer ${this.apiKey}`) return { kind: "error", status: 401, message: "Incorrect API key provided." };
    if ((request.body as { stream?: unknown } | undefined)?.stream !== true) return { kind: "error", status: 400, message: "This scripted server only streams; set stream: true." };
    return undefined;
  }

  errorBody(error: ScriptedError): unknown {
    return { error: { message: error.message, type: error.status >= 500 ? "server_error" : "invalid_request_error", param: null, code: null } };
  }

  inStreamError(error: ScriptedError): string {
    return sseEvent("error", { type: "error", code: "server_error", message: error.message, param: null, sequence_number: 0 });
  }

  async stream(reply: ScriptedStream, request: RecordedRequest, emit: (frame: string, content?: boolean) => Promise<void>): Promise<unknown> {
    const model = (request.body as { model: string }).model;
    const response = { id: `resp_${randomUUID().slice(0, 12)}`, object: "response", created_at: Math.floor(Date.now() / 1000), model, status: "in_progress", output: [] as unknown[] };
    const itemId = `msg_${randomUUID().slice(0, 12)}`;
    let sequence = 0;
    const event = (type: string, data: object): string => sseEvent(type, { type, sequence_number: sequence++, ...data });

    await emit(event("response.created", { response }));
    await emit(event("response.output_item.added", { output_index: 0, item: { id: itemId, type: "message", role: "assistant", status: "in_progress", content: [] } }));
    await emit(event("response.content_part.added", { item_id: itemId, output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }));
    for (const delta of reply.text ?? []) await emit(event("response.output_text.delta", { item_id: itemId, output_index: 0, content_index: 0, delta }), true);
    const text = (reply.text ?? []).join("");
    const part = { type: "output_text", text, annotations: [] };
    const item = { id: itemId, type: "message", role: "assistant", status: "completed", content: [part] };
    await emit(event("response.output_text.done", { item_id: itemId, output_index: 0, content_index: 0, text }));
    await emit(event("response.content_part.done", { item_id: itemId, output_index: 0, content_index: 0, part }));
    await emit(event("response.output_item.done", { output_index: 0, item }));
    const usage = reply.usage ?? { inputTokens: 0, outputTokens: 0 };
    const usageSent = { input_tokens: usage.inputTokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: usage.outputTokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: usage.inputTokens + usage.outputTokens };
    await emit(event("response.completed", { response: { ...response, status: "completed", output: [item], usage: usageSent } }));
    return usageSent;
  }
}

/** Start a fake Responses API server; its `baseUrl` ends in `/v1`, like OpenAI's. */
export async function startOpenAIResponsesServer(apiKey: string): Promise<ScriptedModelServer & { baseUrl: string }> {
  const server = await new ScriptedModelServer(new OpenAIResponsesProtocol(apiKey)).start();
  return Object.assign(server, { baseUrl: `${server.url}/v1` });
}
