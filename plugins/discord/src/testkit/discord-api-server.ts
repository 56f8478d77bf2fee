import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A UTF-16 surrogate without its pair: not a Unicode character, so not something Discord stores. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A message the fake API received on an interaction's webhook. */
export interface ReceivedDiscordMessage {
  applicationId: string;
  interactionToken: string;
  /** `edit-original` (PATCH .../messages/@original) or `followup` (POST /webhooks/...). */
  kind: "edit-original" | "followup";
  /** As sent; `messages(token)` shows it as Discord stores it (trimmed). */
  content: string;
  allowedMentions: unknown;
}

/**
 * A local server speaking the parts of Discord's HTTP API the channel uses, on
 * Discord's wire format: the interaction webhook (PATCH
 * and GET /api/v10/webhooks/{app}/{token}/messages/@original, POST
 * /api/v10/webhooks/{app}/{token}), the channel's view of an interaction's
 * messages (the deferred original first, `messages(token)`, each trimmed and
 * stripped of lone surrogates as Discord stores it), its errors (401 Invalid Webhook Token,
 * 400 Invalid Form Body for empty or over-2000-character content), its rate
 * limits (X-RateLimit-* headers on every answer, 429 with `retry_after` and
 * Retry-After, or Retry-After alone as a shared or Cloudflare limit answers), and a CDN serving attachment bytes at /attachments/{id}/{name}.
 */
export class FakeDiscordApi {
  readonly received: ReceivedDiscordMessage[] = [];
  /** Every request, in order, with when it arrived (for rate-limit checks). */
  readonly requests: Array<{ method: string; path: string; at: number; status: number }> = [];
  private readonly tokens = new Set<string>();
  /** Per interaction token, its messages as the channel shows them: the deferred original, then the follow-ups. */
  private readonly channel = new Map<string, { original: string | undefined; followups: string[] }>();
  private failAfterCount: number | undefined;
  private readonly files = new Map<string, { bytes: Uint8Array; contentType: string }>();
  private rateLimited = 0;
  private retryAfterSeconds = 0.2;
  private rateLimitBucketHeaders = true;
  private exhaustBucketFor = 0;
  private failures = 0;
  private server: Server | undefined;
  private baseUrl = "";
  private messageId = 1000;
  /** Per bucket, until when (epoch ms) it announced itself exhausted or rate limited. */
  private readonly blockedUntil = new Map<string, number>();
  /** Requests that arrived while their bucket said to wait (Discord answers those 429 and may ban the client). */
  readonly violations: Array<{ bucket: string; early: boolean }> = [];

  /** http://127.0.0.1:<port>/api, the value for apiBaseUrl / DISCORD_API_BASE_URL. */
  get apiBaseUrl(): string {
    return `${this.baseUrl}/api`;
  }

  get cdnBaseUrl(): string {
    return `${this.baseUrl}/attachments`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.serve(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Discord knows the token of every interaction it sent; others get 401. */
  registerInteraction(token: string): void {
    this.tokens.add(token);
    // The deferred response (type 5) made the original message, empty and loading, above anything sent later.
    if (!this.channel.has(token)) this.channel.set(token, { original: undefined, followups: [] });
  }

  /** The interaction's messages in channel order: the original response (once edited), then each follow-up. */
  messages(token: string): string[] {
    const messages = this.channel.get(token);
    return messages ? [...(messages.original !== undefined ? [messages.original] : []), ...messages.followups] : [];
  }

  /** Serve bytes at the CDN; returns the attachment's URL. */
  addAttachment(id: string, filename: string, bytes: Uint8Array, contentType = "application/octet-stream"): string {
    this.files.set(`${id}/${filename}`, { bytes, contentType });
    return `${this.cdnBaseUrl}/${id}/${encodeURIComponent(filename)}`;
  }

  /**
   * The next `count` webhook requests get 429 with `retry_after` seconds. `bucketHeaders: false` answers as a
   * shared or Cloudflare limit does: the wait only in Retry-After and the body, no X-RateLimit-* headers.
   */
  rateLimitNext(count: number, retryAfterSeconds = 0.2, options: { bucketHeaders?: boolean } = {}): void {
    this.rateLimited = count;
    this.retryAfterSeconds = retryAfterSeconds;
    this.rateLimitBucketHeaders = options.bucketHeaders ?? true;
  }

  /** The next follow-up answer says its bucket is exhausted (X-RateLimit-Remaining: 0) for `seconds`. */
  exhaustBucketAfterNextFollowup(seconds: number): void {
    this.exhaustBucketFor = seconds;
  }

  /** The next `count` webhook requests fail with 500. */
  failNext(count: number): void {
    this.failures = count;
  }

  /** The webhook request after the next `count` ones fails with 500. */
  failAfter(count: number): void {
    this.failAfterCount = count;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.baseUrl);
    const method = req.method ?? "GET";
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      this.requests.push({ method, path: url.pathname, at: Date.now(), status });
      if (status === 204) {
        res.writeHead(204, headers).end();
        return;
      }
      res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
    };
    const file = /^\/attachments\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (method === "GET" && file) {
      const stored = this.files.get(`${file[1]}/${decodeURIComponent(file[2]!)}`);
      if (!stored) return send(404, { message: "Not Found" });
      this.requests.push({ method, path: url.pathname, at: Date.now(), status: 200 });
      res.writeHead(200, { "content-type": stored.contentType, "content-length": String(stored.bytes.byteLength) }).end(stored.bytes);
      return;
    }
    const webhook = /^\/api\/v10\/webhooks\/([^/]+)\/([^/]+)(\/messages\/@original)?$/.exec(url.pathname);
    if (!webhook || !(((method === "PATCH" || method === "GET") && webhook[3]) || (method === "POST" && !webhook[3]))) return send(404, { message: "404: Not Found", code: 0 });
    const bucket = method === "GET" ? "webhook-get" : webhook[3] ? "webhook-edit" : "webhook-execute";
    const limitHeaders = (remaining: number, resetAfter: number) => ({
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": String(remaining),
      "x-ratelimit-reset": String(Date.now() / 1000 + resetAfter),
      "x-ratelimit-reset-after": String(resetAfter),
      "x-ratelimit-bucket": bucket,
    });
    const blocked = this.blockedUntil.get(bucket) ?? 0;
    if (Date.now() < blocked) {
      this.violations.push({ bucket, early: true });
      const wait = (blocked - Date.now()) / 1000;
      return send(429, { message: "You are being rate limited.", retry_after: wait, global: false }, { ...limitHeaders(0, wait), "retry-after": String(Math.ceil(wait)), "x-ratelimit-scope": "user" });
    }
    if (this.rateLimited > 0) {
      this.rateLimited -= 1;
      this.blockedUntil.set(bucket, Date.now() + this.retryAfterSeconds * 1000);
      return send(429, { message: "You are being rate limited.", retry_after: this.retryAfterSeconds, global: false }, {
        ...(this.rateLimitBucketHeaders ? { ...limitHeaders(0, this.retryAfterSeconds), "x-ratelimit-scope": "user" } : {}),
        "retry-after": String(Math.ceil(this.retryAfterSeconds)),
      });
    }
    if (this.failAfterCount !== undefined) {
      if (this.failAfterCount === 0) this.failures += 1;
      this.failAfterCount = this.failAfterCount === 0 ? undefined : this.failAfterCount - 1;
    }
    if (this.failures > 0) {
      this.failures -= 1;
      return send(500, { message: "500: Internal Server Error", code: 0 });
    }
    const [, applicationId, token] = webhook as unknown as [string, string, string];
    if (!this.tokens.has(decodeURIComponent(token))) return send(401, { message: "Invalid Webhook Token", code: 50027 });
    const channel = this.channel.get(decodeURIComponent(token))!;
    if (method === "GET") {
      // Until it is edited, a deferred original is empty with the LOADING flag (1 << 7).
      const original = { id: "1000", type: 20, content: channel.original ?? "", flags: channel.original === undefined ? 128 : 0, channel_id: "0", author: { id: applicationId, username: "bot" }, attachments: [], embeds: [], mentions: [], timestamp: new Date().toISOString() };
      return send(200, original, limitHeaders(4, 1));
    }
    let body: { content?: unknown; allowed_mentions?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as typeof body;
    } catch {
      return send(400, { message: "400: Bad Request", code: 50109 });
    }
    const content = typeof body.content === "string" ? body.content : "";
    // Discord trims what it shows: whitespace alone is an empty message.
    if (content.trim().length === 0) return send(400, { message: "Cannot send an empty message", code: 50006 });
    if (content.length > 2000) {
      return send(400, { message: "Invalid Form Body", code: 50035, errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length." }] } } });
    }
    this.received.push({ applicationId: decodeURIComponent(applicationId), interactionToken: decodeURIComponent(token), kind: webhook[3] ? "edit-original" : "followup", content, allowedMentions: body.allowed_mentions });
    // Discord stores and returns the content without its leading and trailing whitespace, and strips characters
    // it takes as invalid (its docs: "may strip certain characters from message content, like invalid unicode").
    const stored = content.replace(LONE_SURROGATE, "").trim();
    if (webhook[3]) channel.original = stored;
    else channel.followups.push(stored);
    const exhausted = webhook[3] ? 0 : this.exhaustBucketFor;
    if (!webhook[3]) this.exhaustBucketFor = 0;
    const message = { id: String((this.messageId += 1)), type: 0, content: stored, channel_id: "0", author: { id: applicationId, username: "bot" }, attachments: [], embeds: [], mentions: [], timestamp: new Date().toISOString() };
    if (exhausted > 0) this.blockedUntil.set(bucket, Date.now() + exhausted * 1000);
    const headers = exhausted > 0 ? limitHeaders(0, exhausted) : limitHeaders(4, 1);
    // Executing a webhook answers 204 unless ?wait=true asks for the message.
    if (method === "POST" && url.searchParams.get("wait") !== "true") return send(204, undefined, headers);
    return send(200, message, headers);
  }
}
