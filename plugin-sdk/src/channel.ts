import { brand, hasBrand, type Branded } from "./brand.js";
import type { JsonValue } from "./json.js";

export interface ChannelAttachment {
  id: string;
  url?: string;
  filename?: string;
  contentType?: string;
  size?: number;
}

/** One normalized inbound turn from a provider. */
export interface ChannelTurn {
  /** Provider event id: ingress is idempotent on it. */
  eventId: string;
  conversationId: string;
  message: string;
  user?: { id: string; name?: string };
  attachments?: ChannelAttachment[];
  /**
   * The run's input metadata, and with the event id, user and attachments its channel metadata.
   * `eventId`, `user` and `attachments` there are always the turn's own fields: the same keys in
   * `metadata` are left out of the channel metadata, so provider data passed through it cannot
   * choose the run's event id, its user, or which files the host downloads.
   */
  metadata?: Record<string, JsonValue>;
  /**
   * What only `deliver()` may see: a secret the reply needs, such as Discord's interaction token.
   * Kept with the run (`RunInput.channel.delivery`) but out of its metadata, so out of the model
   * context, resolvers, tools and context policies; handed back as `ChannelDelivery.deliveryMetadata`.
   */
  deliveryMetadata?: Record<string, JsonValue>;
  /**
   * What the provider is answered once the turn is durably accepted (and for a
   * duplicate of it), instead of the run summary: e.g. Discord's deferred
   * response. The reply itself goes out later through `deliver`.
   */
  respond?: { status?: number; body?: JsonValue };
}

/** A fast acknowledgement (e.g. a provider's ping) that starts no run. */
export interface ChannelAck {
  ack: true;
  status?: number;
  body?: JsonValue;
}

/** A request on a channel's route, as `normalizeHttp` receives it. */
export interface ChannelRequest {
  method: string;
  /** The path alone, without the query: the channel's route. */
  path: string;
  /**
   * The query string's parameters, decoded (`?hub.mode=subscribe&hub.challenge=123` gives
   * `{ "hub.mode": "subscribe", "hub.challenge": "123" }`): a parameter given once is a string,
   * one given more than once an array of its values in order. The Node host always sets it;
   * optional so a request built by hand (a test, a conformance subject) may leave it out.
   */
  query?: Record<string, string | string[]>;
  /**
   * The path and query exactly as requested (`/hooks/sms?To=%2B1555`), for a provider that
   * signs the URL it called (Twilio: your public origin followed by this). Set with `query`.
   */
  url?: string;
  headers: Record<string, string | undefined>;
  body: JsonValue | undefined;
  rawBody: Uint8Array;
  /**
   * Aborted when the host stops waiting for normalizeHttp (the Node host: its requestTimeoutMs), after
   * which the caller is answered 503 and nothing the channel returns is used: stop any provider call then.
   * The Node host always sets it; optional so a request built by hand (a test) may leave it out.
   */
  signal?: AbortSignal;
}

/** How to download one attachment (`ChannelModule.resolveAttachment`). */
export interface ChannelAttachmentDownload {
  url: string;
  /** Sent to `url`'s origin only, never to a redirect target elsewhere. */
  headers?: Record<string, string>;
  /** The stored file's name, when the attachment has none or a worse one. */
  filename?: string;
  /**
   * The hosts this download may reach, redirects included (exact names, or "*.example.com"
   * for subdomains): a hop to any other host is refused, and the attachment is not stored.
   * It narrows the host's own allowlist, never widens it (a private or loopback address stays
   * reachable only through a host the operator listed). Omitted: any host the host allows.
   */
  allowedHosts?: string[];
}

/** What `ChannelModule.resolveAttachment` is told besides the attachment. */
export interface ChannelAttachmentContext {
  conversationId: string;
  /**
   * Aborted when the host stops waiting for this call (its attachment timeout): stop the provider
   * lookup then. The Node host always sets it; optional so a call made by hand (a test) may leave it out.
   */
  signal?: AbortSignal;
}

/** One attempt at delivering a run's reply (`ChannelModule.deliver`). */
export interface ChannelDelivery {
  /** The same for every attempt at this reply, in any process: a key for the provider's idempotency, or for the channel's own record of what it sent. */
  deliveryId: string;
  /** 1 for the first attempt, 2 for the first retry... */
  attempt: number;
  /**
   * Aborted when the host stops waiting for this attempt (its deliver timeout):
   * stop sending, since the outbox will try again, and a late send could repeat it.
   */
  signal: AbortSignal;
  conversationId: string | null;
  runId: string;
  text: string;
  /** The channel metadata of the run's turn (what normalizeHttp put in ChannelTurn.metadata). */
  metadata?: Record<string, JsonValue>;
  /** What normalizeHttp put in ChannelTurn.deliveryMetadata: for this reply only. */
  deliveryMetadata?: Record<string, JsonValue>;
}

/**
 * One attempt at telling a channel that a run it started failed (`ChannelModule.deliverFailure`):
 * what `deliver` gets, but no reply text; `code` is the failure's error code, if it has one. Show
 * the user a message of the channel's own, never the error's text (it may name internals).
 */
export interface ChannelFailureDelivery extends Omit<ChannelDelivery, "text"> {
  code: string | null;
}

/**
 * Mark a deliver() failure that trying again cannot mend (the provider says the
 * conversation or its token is gone): the outbox fails the delivery at once
 * instead of retrying it with backoff. `throw finalDeliveryFailure(error)`.
 */
export function finalDeliveryFailure<E extends Error>(error: E): E & { retryable: false } {
  return Object.assign(error, { retryable: false as const });
}

/** Whether a deliver() failure was marked with finalDeliveryFailure. */
export function isFinalDeliveryFailure(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { retryable?: unknown }).retryable === false;
}

/**
 * Mark a deliver() failure the provider asked to retry no sooner than `retryAfterMs` from now (a
 * 429's Retry-After): the outbox's next attempt waits that long, or its own backoff when that is
 * longer, and at most its `maxDelayMs`. The attempt still counts toward the outbox's last one.
 * `throw retryDeliveryAfter(error, 30_000)`; any error with a `retryAfterMs` number does the same.
 */
export function retryDeliveryAfter<E extends Error>(error: E, retryAfterMs: number): E & { retryAfterMs: number } {
  return Object.assign(error, { retryAfterMs });
}

/**
 * The wait a deliver() failure asks for (retryDeliveryAfter), in ms; undefined when it names none,
 * or one that is not a finite number of 0 or more, so a garbled provider header means plain backoff.
 */
export function deliveryRetryAfterMs(error: unknown): number | undefined {
  const value = typeof error === "object" && error !== null ? (error as { retryAfterMs?: unknown }).retryAfterMs : undefined;
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/**
 * A request path as HTTP hosts route it: empty segments dropped, so `/message/` and `//message`
 * are `/message`. The compiler refuses two channels whose routes are one path by this rule, and
 * the Node host routes, authorizes and matches channels by it, so both judge the same path.
 */
export function routedPath(path: string): string {
  return `/${path.split("/").filter((segment) => segment !== "").join("/")}`;
}

export interface ChannelConfig {
  transport: "http";
  route: string;
  methods?: Array<"GET" | "POST" | "PUT" | "PATCH" | "DELETE">;
  /** Any-of groups of env variables production ingress requires. */
  ingress?: { requiredSecretEnv?: string[][] };
}

/** What a channel module implements (`channels/*.ts` or a provider helper). */
export interface ChannelModule {
  config: ChannelConfig;
  /**
   * Verify and normalize a request into a turn or a fast acknowledgement. To refuse a
   * request, throw an error with a 4xx `status` (or `statusCode`), e.g. 401 for a bad
   * signature: the host answers with that status and the error's message, so write it for
   * the caller. Any other error is the channel failing: the host logs it and answers a
   * generic 500 (503 while the state store is down) that shows nothing of it. One that does not
   * answer in time (the Node host's requestTimeoutMs) is given up: `request.signal` aborts and the
   * caller gets a generic 503.
   */
  normalizeHttp?(request: ChannelRequest): ChannelTurn | ChannelAck | Promise<ChannelTurn | ChannelAck>;
  /**
   * Deliver a reply; throwing makes the outbox retry with backoff (up to its last
   * attempt), unless the error is a finalDeliveryFailure. An error marked with
   * retryDeliveryAfter (the provider said when to come back) is retried no sooner
   * than that. Stop when `signal` aborts.
   */
  deliver?(delivery: ChannelDelivery): Promise<void>;
  /**
   * Tell the provider that a run from it failed, e.g. replace "thinking..." with an apology, so the
   * user is not left waiting for a reply that will never come. Optional: a channel without it is told
   * nothing (as before). Retried through the outbox as `deliver` is.
   */
  deliverFailure?(failure: ChannelFailureDelivery): Promise<void>;
  /**
   * Turn an attachment into a download request; undefined for a plain URL download. The host gives
   * it as long as a download (its `attachments.timeoutMs`): then `ctx.signal` aborts, the attachment
   * is recorded as failed and the run starts without it.
   */
  resolveAttachment?(attachment: ChannelAttachment, ctx: ChannelAttachmentContext): ChannelAttachmentDownload | undefined | Promise<ChannelAttachmentDownload | undefined>;
}

export type ChannelDefinition = ChannelConfig & Branded<"assembly-line.channel">;

export function defineChannel(config: ChannelConfig): ChannelDefinition {
  return brand("assembly-line.channel", config);
}

export function isChannelDefinition(value: unknown): value is ChannelDefinition {
  return hasBrand(value, "assembly-line.channel");
}
