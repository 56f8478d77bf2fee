import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * What a fake provider is scripted to answer, protocol-neutral. Each server
 * renders it in its provider's documented wire format.
 */
export type ScriptedReply = ScriptedStream | ScriptedError;

export interface ScriptedStream {
  kind: "stream";
  /** Text deltas, one SSE event each. */
  text?: string[];
  /** Tool calls after the text; each argument chunk is its own SSE event. */
  toolCalls?: ScriptedToolCall[];
  /** Default: "tool_use" when there are tool calls, else "end". */
  stop?: "end" | "tool_use" | "max_tokens";
  usage?: ScriptedUsage;
  /** Stop after this many content events until `until` settles (or the client goes away). */
  holdAfter?: { events: number; until: Promise<void> };
  /**
   * End the stream abnormally before content event number `events` (0: right
   * after the stream's opening event): `"drop"` closes the connection, `"end"`
   * ends the response cleanly without the provider's end marker (OpenAI's
   * finish_reason and `[DONE]`, Anthropic's `message_stop`), an error is sent as
   * the provider's in-stream error event (after its HTTP 200).
   */
  breakAfter?: { events: number; with: "drop" | "end" | ScriptedError };
}

export interface ScriptedToolCall {
  id: string;
  name: string;
  argumentChunks: string[];
}

/**
 * Token counts as the provider reports them. Anthropic reports the four fields
 * as they are; OpenAI reports prompt_tokens = input + cacheRead + cacheWrite with
 * cacheRead as prompt_tokens_details.cached_tokens.
 */
export interface ScriptedUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

export interface ScriptedError {
  kind: "error";
  status: number;
  message: string;
  headers?: Record<string, string>;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
  /** The reply this request got (undefined when the script had none left). */
  reply?: ScriptedReply;
  /** The usage object the server put on the wire, in the provider's own field names. */
  usageSent?: unknown;
}

/** The protocol-specific part of a fake provider. */
export interface ProtocolRenderer {
  /** Path of the one endpoint, e.g. "/v1/chat/completions". */
  readonly endpoint: string;
  /** An error response for a request the real provider would refuse before scripting applies, or undefined. */
  refuse(request: RecordedRequest): ScriptedError | undefined;
  /** Body and content type of an error response, in the provider's format. */
  errorBody(error: ScriptedError): unknown;
  /** Headers the provider sends on every response. */
  commonHeaders(): Record<string, string>;
  /** The provider's in-stream error event, sent after the response's 200 (OpenAI: a `data:` frame with `error`; Anthropic: `event: error`). */
  inStreamError(error: ScriptedError): string;
  /** Write the SSE stream; `emit` writes one frame. Returns the usage object sent. */
  stream(reply: ScriptedStream, request: RecordedRequest, emit: (frame: string, content?: boolean) => Promise<void>): Promise<unknown>;
}

/** A fake model provider on 127.0.0.1 with a queue of scripted replies. */
export class ScriptedModelServer {
  readonly requests: RecordedRequest[] = [];
  private readonly replies: ScriptedReply[] = [];
  private server: Server | undefined;
  private origin = "";

  constructor(private readonly protocol: ProtocolRenderer) {}

  async start(): Promise<this> {
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.server = server;
    this.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  /** Origin of the server, e.g. http://127.0.0.1:40123. */
  get url(): string {
    return this.origin;
  }

  /** Queue replies; each request takes the next one. */
  enqueue(...replies: ScriptedReply[]): this {
    this.replies.push(...replies);
    return this;
  }

  text(chunks: string[], usage?: ScriptedUsage): this {
    return this.enqueue({ kind: "stream", text: chunks, ...(usage ? { usage } : {}) });
  }

  toolCalls(calls: ScriptedToolCall[], usage?: ScriptedUsage): this {
    return this.enqueue({ kind: "stream", toolCalls: calls, ...(usage ? { usage } : {}) });
  }

  error(status: number, message: string, headers?: Record<string, string>): this {
    return this.enqueue({ kind: "error", status, message, ...(headers ? { headers } : {}) });
  }

  get pendingReplies(): number {
    return this.replies.length;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const request: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: safeJson(raw) };
    this.requests.push(request);
    const common = this.protocol.commonHeaders();

    if (request.method !== "POST" || request.path !== this.protocol.endpoint) {
      return this.sendError(res, { kind: "error", status: 404, message: `Invalid URL (${request.method} ${request.path})` }, common);
    }
    const refusal = this.protocol.refuse(request);
    if (refusal) return this.sendError(res, refusal, common);

    const reply = this.replies.shift();
    if (!reply) {
      return this.sendError(res, { kind: "error", status: 400, message: `scripted server: no reply left for request ${this.requests.length}` }, common);
    }
    request.reply = reply;
    if (reply.kind === "error") return this.sendError(res, reply, common);

    res.writeHead(200, { ...common, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
    let contentEvents = 0;
    let gone = false;
    res.on("close", () => (gone = true));
    const emit = async (frame: string, content = false): Promise<void> => {
      if (gone) return;
      if (content && reply.breakAfter && contentEvents === reply.breakAfter.events) throw new StreamBreak();
      if (content && reply.holdAfter && contentEvents === reply.holdAfter.events) {
        await Promise.race([reply.holdAfter.until, new Promise((resolve) => res.once("close", resolve))]);
        if (gone) return;
      }
      if (content) contentEvents += 1;
      await writeSplit(res, frame);
    };
    try {
      request.usageSent = await this.protocol.stream(reply, request, emit);
    } catch (error) {
      if (!(error instanceof StreamBreak) || !reply.breakAfter) throw error;
      const cause = reply.breakAfter.with;
      if (cause === "drop") return void res.socket?.destroy();
      if (cause !== "end") await writeSplit(res, this.protocol.inStreamError(cause));
    }
    if (!gone) res.end();
  }

  private sendError(res: ServerResponse, error: ScriptedError, common: Record<string, string>): void {
    const body = JSON.stringify(this.protocol.errorBody(error));
    res.writeHead(error.status, { ...common, "content-type": "application/json", ...error.headers });
    res.end(body);
  }
}

/** Unwinds a scripted stream at its `breakAfter` point. */
class StreamBreak extends Error {}

/*
 * A frame goes out in two writes, split mid-JSON, so the client's SSE parser has
 * to reassemble events that straddle network reads, as it does against real providers.
 */
async function writeSplit(res: ServerResponse, frame: string): Promise<void> {
  const cut = Math.max(1, Math.floor(frame.length / 2));
  res.write(frame.slice(0, cut));
  await new Promise((resolve) => setImmediate(resolve));
  res.write(frame.slice(cut));
  await new Promise((resolve) => setImmediate(resolve));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function sseData(data: unknown): string {
  return `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

export function sseEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
