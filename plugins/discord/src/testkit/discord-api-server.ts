import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** An interaction token lives 15 minutes after the interaction. */
const TOKEN_LIFETIME_MS = 15 * 60_000;

/** The id of every interaction's original response (the deferred one). */
const ORIGINAL_ID = "1000";

/** A UTF-16 surrogate without its pair: not a Unicode character, so not something Discord stores. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A message the fake API received on an interaction's webhook. */
export interface ReceivedDiscordMessage {
  applicationId: string;
  interactionToken: string;
  /**
   * `edit-original` (PATCH .../messages/@original) or `followup` (POST /webhooks/...); a follow-up to an original
   * still loading edits it, as on Discord (`messages(token)` shows the result).
   */
  kind: "edit-original" | "followup";
  /** As sent; `messages(token)` shows it as Discord stores it (trimmed). */
  content: string;
  allowedMentions: unknown;
}

/** A message the bot created in a channel (POST /channels/{id}/messages); one returned again for its nonce is not listed twice. */
export interface ChannelMessage {
  id: string;
  channelId: string;
  /** As sent; `channelMessages(id)` shows it as Discord stores it (trimmed). */
  content: string;
  allowedMentions: unknown;
  nonce: string | number | undefined;
  enforceNonce: boolean;
  at: number;
}

export interface FakeDiscordApiOptions {
  /** The bot token `Authorization: Bot <token>` must carry on channel routes. Default "fake-bot-token". */
  botToken?: string;
  /**
   * How long an enforced nonce returns the message made before, in ms. Discord says "the past few minutes"
   * and no more; default 2 minutes.
   */
  nonceWindowMs?: number;
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
 * An interaction's token expires 15 minutes after it (`registerInteraction(token, { createdAt })`) or when a test
 * says so (`expireInteraction`): its webhook then answers 401 Invalid Webhook Token (50027). A deleted original
 * (`deleteOriginal`) answers 404 Unknown Message (10008) on @original while follow-ups still go out. A follow-up
 * sent while the deferred original still loads (never edited, not deleted) edits the original instead of making a
 * message, as Discord documents ("this endpoint will function as Edit Original Interaction Response"); a follow-up
 * always answers with its message (Discord's `wait` is always true for interactions), and past the interaction's
 * `followupLimit` answers 400 (40094), as for a user-installed app not in the server. The bot's
 * channel messages (POST /api/v10/channels/{id}/messages) need `Authorization: Bot <botToken>` (else 401), take a
 * `nonce` of at most 25 characters, and with `enforce_nonce: true` return the message the bot made with the same
 * nonce within `nonceWindowMs` instead of a second one, as Discord does; the same failures and rate limits apply.
 */
export class FakeDiscordApi {
  readonly received: ReceivedDiscordMessage[] = [];
  /** Every request, in order, with when it arrived (for rate-limit checks). */
  readonly requests: Array<{ method: string; path: string; at: number; status: number }> = [];
  /** Per interaction token, when it expires (epoch ms). */
  private readonly tokens = new Map<string, number>();
  /** Per interaction token, its messages as the channel shows them: the deferred original, then the follow-ups. */
  private readonly channel = new Map<string, { original: string | undefined; deleted: boolean; followups: string[]; followupLimit: number }>();
  /** The bot's messages, in the order created. */
  readonly posted: ChannelMessage[] = [];
  readonly botToken: string;
  private readonly nonceWindowMs: number;
  private readonly deniedChannels = new Set<string>();
  private failAfterCount: number | undefined;
  private readonly files = new Map<string, { bytes: Uint8Array; contentType: string }>();
  private rateLimited = 0;
  private retryAfterSeconds = 0.2;
  private rateLimitBucketHeaders = true;
  /** Until when (epoch ms) the bot is over its global rate limit. */
  private botLimitedUntil = 0;
  private exhaustBucketFor = 0;
  private failures = 0;
  private readonly refusals: Array<{ status: number; code: number; message: string }> = [];
  private server: Server | undefined;
  private baseUrl = "";
  private messageId = 1000;
  /** Per bucket, until when (epoch ms) it announced itself exhausted or rate limited. */
  private readonly blockedUntil = new Map<string, number>();
  /** Requests that arrived while their bucket said to wait (Discord answers those 429 and may ban the client). */
  readonly violations: Array<{ bucket: string; early: boolean }> = [];

  constructor(options: FakeDiscordApiOptions = {}) {
    this.botToken = options.botToken ?? "fake-bot-token";
    this.nonceWindowMs = options.nonceWindowMs ?? 120_000;
  }

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

  /**
   * Discord knows the token of every interaction it sent, for 15 minutes from `createdAt` (default now); others get
   * 401. `followupLimit`: how many follow-up messages it takes (Discord allows 5 to a user-installed app that is
   * not in the server); default no limit.
   */
  registerInteraction(token: string, options: { createdAt?: number; followupLimit?: number } = {}): void {
    this.tokens.set(token, (options.createdAt ?? Date.now()) + TOKEN_LIFETIME_MS);
    // The deferred response (type 5) made the original message, empty and loading, above anything sent later.
    if (!this.channel.has(token)) this.channel.set(token, { original: undefined, deleted: false, followups: [], followupLimit: options.followupLimit ?? Infinity });
  }

  /** The interaction's token expires now, as 15 minutes after the interaction: its webhook answers 401 (50027). */
  expireInteraction(token: string): void {
    if (this.tokens.has(token)) this.tokens.set(token, Date.now());
  }

  /** The user deletes the interaction's original response: @original answers 404 Unknown Message (10008). */
  deleteOriginal(token: string): void {
    const messages = this.channel.get(token);
    if (messages) Object.assign(messages, { original: undefined, deleted: true });
  }

  /** The bot may not see the channel: posting there answers 403 Missing Access (50001). */
  denyChannel(channelId: string): void {
    this.deniedChannels.add(channelId);
  }

  /** The bot's messages in a channel, in order, as Discord stores them (trimmed). */
  channelMessages(channelId: string): string[] {
    return this.posted.filter((message) => message.channelId === channelId).map((message) => stored(message.content));
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

  /**
   * The bot is over its global rate limit for `seconds`: its channel messages get 429 with `global: true` and
   * X-RateLimit-Global until then, while the interaction webhooks, which Discord does not bind to it, still work.
   */
  limitBotGlobally(seconds: number): void {
    this.botLimitedUntil = Date.now() + seconds * 1000;
  }

  /** The next follow-up or channel message answer says its bucket is exhausted (X-RateLimit-Remaining: 0) for `seconds`. */
  exhaustBucketAfterNextFollowup(seconds: number): void {
    this.exhaustBucketFor = seconds;
  }

  /** The next `count` API requests (webhook or channel) fail with 500. */
  failNext(count: number): void {
    this.failures = count;
  }

  /** The next API request (webhook or channel) is refused with this error, e.g. `{ status: 403, code: 50007, message: "Cannot send messages to this user" }`. */
  refuseNext(error: { status: number; code: number; message: string }): void {
    this.refusals.push(error);
  }

  /** The API request (webhook or channel) after the next `count` ones fails with 500. */
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
    const channelRoute = /^\/api\/v10\/channels\/([^/]+)\/messages$/.exec(url.pathname);
    const isWebhook = webhook !== null && (((method === "PATCH" || method === "GET") && webhook[3] !== undefined) || (method === "POST" && webhook[3] === undefined));
    if (!isWebhook && !(channelRoute && method === "POST")) return send(404, { message: "404: Not Found", code: 0 });
    // Discord limits a channel's messages per channel (its major parameter), in a bucket of their own.
    const bucket = channelRoute ? `channel-messages:${decodeURIComponent(channelRoute[1]!)}` : method === "GET" ? "webhook-get" : webhook![3] ? "webhook-edit" : "webhook-execute";
    const limitHeaders = (remaining: number, resetAfter: number) => ({
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": String(remaining),
      "x-ratelimit-reset": String(Date.now() / 1000 + resetAfter),
      "x-ratelimit-reset-after": String(resetAfter),
      "x-ratelimit-bucket": bucket.split(":")[0]!,
    });
    if (channelRoute && Date.now() < this.botLimitedUntil) {
      const wait = (this.botLimitedUntil - Date.now()) / 1000;
      return send(429, { message: "You are being rate limited.", retry_after: wait, global: true }, { "retry-after": String(Math.ceil(wait)), "x-ratelimit-global": "true", "x-ratelimit-scope": "global" });
    }
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
    const refusal = this.refusals.shift();
    if (refusal) return send(refusal.status, { message: refusal.message, code: refusal.code });
    if (channelRoute) return this.createChannelMessage(req, decodeURIComponent(channelRoute[1]!), chunks, bucket, send, limitHeaders);
    const [, applicationId, token] = webhook as unknown as [string, string, string];
    const atOriginal = webhook![3] !== undefined;
    const expiresAt = this.tokens.get(decodeURIComponent(token));
    if (expiresAt === undefined || Date.now() >= expiresAt) return send(401, { message: "Invalid Webhook Token", code: 50027 });
    const channel = this.channel.get(decodeURIComponent(token))!;
    if (atOriginal && channel.deleted) return send(404, { message: "Unknown Message", code: 10008 });
    if (method === "GET") {
      // Until it is edited, a deferred original is empty with the LOADING flag (1 << 7).
      const original = { id: ORIGINAL_ID, type: 20, content: channel.original ?? "", flags: channel.original === undefined ? 128 : 0, channel_id: "0", author: { id: applicationId, username: "bot" }, attachments: [], embeds: [], mentions: [], timestamp: new Date().toISOString() };
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
    // Directly after the deferred response, a follow-up edits the loading original: no new message is made.
    const editsOriginal = atOriginal || (channel.original === undefined && !channel.deleted);
    if (!editsOriginal && channel.followups.length >= channel.followupLimit) return send(400, { message: "This interaction has hit the maximum number of follow up messages", code: 40094 });
    this.received.push({ applicationId: decodeURIComponent(applicationId), interactionToken: decodeURIComponent(token), kind: atOriginal ? "edit-original" : "followup", content, allowedMentions: body.allowed_mentions });
    const kept = stored(content);
    if (editsOriginal) channel.original = kept;
    else channel.followups.push(kept);
    const exhausted = atOriginal ? 0 : this.exhaustBucketFor;
    if (!atOriginal) this.exhaustBucketFor = 0;
    const message = { id: editsOriginal ? ORIGINAL_ID : String((this.messageId += 1)), type: 0, content: kept, channel_id: "0", author: { id: applicationId, username: "bot" }, attachments: [], embeds: [], mentions: [], timestamp: new Date().toISOString() };
    if (exhausted > 0) this.blockedUntil.set(bucket, Date.now() + exhausted * 1000);
    const headers = exhausted > 0 ? limitHeaders(0, exhausted) : limitHeaders(4, 1);
    // An interaction's follow-up answers with its message whatever `wait` says (always true for interactions).
    return send(200, message, headers);
  }

  /** POST /channels/{id}/messages as the bot: Bot auth, the content and nonce checked, an enforced nonce answered with the message it made. */
  private createChannelMessage(
    req: IncomingMessage,
    channelId: string,
    chunks: Buffer[],
    bucket: string,
    send: (status: number, body: unknown, headers?: Record<string, string>) => void,
    limitHeaders: (remaining: number, resetAfter: number) => Record<string, string>,
  ): void {
    if (req.headers.authorization !== `Bot ${this.botToken}`) return send(401, { message: "401: Unauthorized", code: 0 });
    if (this.deniedChannels.has(channelId)) return send(403, { message: "Missing Access", code: 50001 });
    let body: { content?: unknown; allowed_mentions?: unknown; nonce?: unknown; enforce_nonce?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as typeof body;
    } catch {
      return send(400, { message: "400: Bad Request", code: 50109 });
    }
    const invalid = (field: string, code: string, message: string) => send(400, { message: "Invalid Form Body", code: 50035, errors: { [field]: { _errors: [{ code, message }] } } });
    const nonce = body.nonce;
    if (nonce !== undefined && !(typeof nonce === "string" || (typeof nonce === "number" && Number.isInteger(nonce)))) return invalid("nonce", "NONCE_TYPE_INVALID", "Nonce must be a string or integer.");
    if (typeof nonce === "string" && nonce.length > 25) return invalid("nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.");
    const content = typeof body.content === "string" ? body.content : "";
    if (content.trim().length === 0) return send(400, { message: "Cannot send an empty message", code: 50006 });
    if (content.length > 2000) return invalid("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
    const enforceNonce = body.enforce_nonce === true;
    // The same author (the bot) with the same nonce in the past few minutes: that message, and no new one.
    const earlier = enforceNonce && nonce !== undefined ? this.posted.find((message) => message.nonce === nonce && Date.now() - message.at < this.nonceWindowMs) : undefined;
    const created = earlier ?? { id: String((this.messageId += 1)), channelId, content, allowedMentions: body.allowed_mentions, nonce: nonce as string | number | undefined, enforceNonce, at: Date.now() };
    if (!earlier) this.posted.push(created);
    const exhausted = this.exhaustBucketFor;
    this.exhaustBucketFor = 0;
    if (exhausted > 0) this.blockedUntil.set(bucket, Date.now() + exhausted * 1000);
    const users = (body.allowed_mentions as { users?: unknown } | undefined)?.users;
    const mentions = Array.isArray(users) ? users.filter((id) => content.includes(`<@${String(id)}>`)).map((id) => ({ id: String(id), username: "user" })) : [];
    const message = { id: created.id, type: 0, content: stored(created.content), channel_id: channelId, author: { id: "1000000000000000001", username: "bot", bot: true }, attachments: [], embeds: [], mentions, nonce: created.nonce, timestamp: new Date(created.at).toISOString() };
    return send(200, message, exhausted > 0 ? limitHeaders(0, exhausted) : limitHeaders(4, 1));
  }
}

/**
 * Content as Discord stores and returns it: without its leading and trailing whitespace, and without characters it
 * takes as invalid (its docs: "may strip certain characters from message content, like invalid unicode").
 */
function stored(content: string): string {
  return content.replace(LONE_SURROGATE, "").trim();
}
