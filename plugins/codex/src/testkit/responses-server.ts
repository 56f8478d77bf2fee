import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One scripted model response: text, or function calls. */
export type ScriptedResponse =
  | { text: string }
  | { toolCalls: Array<{ callId: string; name: string; arguments: unknown }> }
  | { hang: true }
  /** A stream that breaks after this much of a reply was streamed (the connection is dropped): Codex retries it. */
  | { dropped: string }
  /** An HTTP error in the API's shape (`{ error: { message, type, ... } }`); the last one answers every later request. */
  | { error: { status: number; message: string } };

/**
 * A local server speaking the OpenAI Responses API the way the Codex CLI calls
 * it: `POST /v1/responses` with `stream: true`, answered as Server-Sent Events
 * (`response.created`, `response.output_item.added`, `response.output_text.delta`,
 * `response.output_item.done`, `response.completed` with usage). Requests
 * without the bearer key of the login session get 401 like the real API.
 */
export class ResponsesServer {
  readonly requests: Array<{ headers: Record<string, string | string[] | undefined>; body: { model: string; input: Array<Record<string, unknown>>; tools?: Array<{ name?: string; type?: string }> } }> = [];
  private readonly script: ScriptedResponse[] = [];
  private server: Server | undefined;
  baseUrl = "";

  constructor(private readonly apiKey: string) {}

  reply(...responses: ScriptedResponse[]): this {
    this.script.push(...responses);
    return this;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        if (req.method !== "POST" || !req.url?.startsWith("/v1/responses")) {
          res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "Not found", type: "invalid_request_error" } }));
          return;
        }
        if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
          res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } }));
          return;
        }
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ResponsesServer["requests"][number]["body"];
        this.requests.push({ headers: req.headers, body });
        // An error scripted last keeps answering: a provider that stays down, whatever the client retries.
        const next = this.script.length === 1 && "error" in this.script[0]! ? this.script[0] : this.script.shift();
        if (!next) {
          res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "the script has no response left", type: "server_error" } }));
          return;
        }
        if ("error" in next) {
          const { status, message } = next.error;
          res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: { message, type: status >= 500 ? "server_error" : "invalid_request_error", param: null, code: null } }));
          return;
        }
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        // A model call that never finishes: the client is killed while it waits.
        if ("hang" in next) return;
        const id = `resp_${this.requests.length}`;
        const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
        send("response.created", { response: { id, object: "response", status: "in_progress", model: body.model, output: [] } });
        const output: unknown[] = [];
        if ("dropped" in next) {
          const itemId = `msg_${this.requests.length}`;
          send("response.output_item.added", { output_index: 0, item: { type: "message", id: itemId, status: "in_progress", role: "assistant", content: [] } });
          send("response.output_text.delta", { item_id: itemId, output_index: 0, content_index: 0, delta: next.dropped });
          setTimeout(() => res.socket?.destroy(), 200);
          return;
        }
        if ("text" in next) {
          const item = { type: "message", id: `msg_${this.requests.length}`, status: "completed", role: "assistant", content: [{ type: "output_text", text: next.text, annotations: [] }] };
          send("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } });
          send("response.output_text.delta", { item_id: item.id, output_index: 0, content_index: 0, delta: next.text });
          send("response.output_item.done", { output_index: 0, item });
          output.push(item);
        } else {
          next.toolCalls.forEach((call, index) => {
            const item = { type: "function_call", id: `fc_${call.callId}`, status: "completed", call_id: call.callId, name: call.name, arguments: JSON.stringify(call.arguments) };
            send("response.output_item.added", { output_index: index, item: { ...item, status: "in_progress", arguments: "" } });
            send("response.output_item.done", { output_index: index, item });
            output.push(item);
          });
        }
        send("response.completed", {
          response: { id, object: "response", status: "completed", model: body.model, output, usage: { input_tokens: 120, input_tokens_details: { cached_tokens: 20 }, output_tokens: 8, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 128 } },
        });
        res.end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The items the model was sent in request `index`, by type. */
  itemsOf(index: number, type: string): Array<Record<string, unknown>> {
    return (this.requests[index]?.body.input ?? []).filter((item) => item.type === type);
  }
}
