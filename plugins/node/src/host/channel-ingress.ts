import { createHash, randomUUID } from "node:crypto";
import {
  isRunOfAgent,
  type ChannelAck,
  type ChannelModule,
  type ChannelRequest,
  type ChannelTurn,
  type JsonValue,
  type RunRecord,
  type RuntimeLogger,
} from "@assemblyline-agents/core";
import type { OpenEveRuntime, RunResult } from "@assemblyline-agents/runtime";
import { HttpError, isJsonContentType, optionalString, parseJsonObject, readBody, requiredString, retryAfterSeconds, sendJson } from "./http.js";
import type { IngressKillSwitch } from "./kill-switch.js";
import type { ConversationMailbox } from "./mailbox.js";
import type { IngressRateLimiter, RateLimitBucket } from "./rate-limit.js";
import type { RequestContext } from "./router.js";
import { isQueuedRunAdoptable } from "./recovery.js";
import type { RunWatcher } from "./run-watcher.js";
import { parseWait } from "./wait-query.js";

export interface ChannelIngressParts {
  runtime: OpenEveRuntime;
  channels: Record<string, ChannelModule>;
  mailbox: ConversationMailbox;
  watcher: RunWatcher;
  killSwitch: IngressKillSwitch;
  rateLimiter: IngressRateLimiter | undefined;
  logger: RuntimeLogger;
  maxBodyBytes: number;
  /** Host-forced model for channel runs. */
  model: string | undefined;
  /** A queued run younger than this may still be in a live replica's mailbox (the recovery sweep's threshold). */
  adoptQueuedAfterMs: number;
  /** How long a provider channel's normalizeHttp may take before the request is answered 503 (the host's requestTimeoutMs). */
  normalizeTimeoutMs: number;
}

/**
 * Turns a request on a channel route into a durably queued run: kill switch,
 * rate limit, body, normalizeHttp (or the default message fallback), mailbox
 * admission, then runtime.submit() idempotent on the provider event id. The
 * response is sent only after the run is in the state store.
 */
export class ChannelIngress {
  private draining = false;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly parts: ChannelIngressParts) {}

  /** Refuse new turns from now on (shutdown). */
  drain(): void {
    this.draining = true;
  }

  /** Resolves when every request past the draining check has answered. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  handle(channel: string, ctx: RequestContext): Promise<void> {
    const work = this.accept(channel, ctx);
    this.inFlight.add(work);
    const forget = () => void this.inFlight.delete(work);
    work.then(forget, forget);
    return work;
  }

  private async accept(channel: string, ctx: RequestContext): Promise<void> {
    const { logger, killSwitch, rateLimiter, channels } = this.parts;
    const module = channels[channel]!;
    const provider = typeof module.normalizeHttp === "function";
    if (this.draining) {
      throw new HttpError(503, "AL_ERR_HOST_DRAINING", "the host is shutting down and accepts no new turns", {
        fix: "Retry shortly; another replica or the restarted host will accept it.",
        headers: { "retry-after": "5" },
      });
    }
    if (killSwitch.engagedIfFresh() ?? (await killSwitch.engaged())) {
      logger.info({ event: "ingress.rejected", reason: "kill_switch", channel, requestId: ctx.requestId }, "ingress kill switch is engaged");
      throw new HttpError(503, "AL_ERR_INGRESS_DISABLED", "the ingress kill switch is engaged; no new turns are accepted", {
        fix: 'An operator releases it with POST /admin/kill-switch {"engaged": false}.',
      });
    }
    // Without a limiter, not even an await: every turn of the microtask queue is paid per request.
    if (rateLimiter && !provider) await this.takeToken(rateLimiter, "run-create", channel, ctx);
    const raw = await readBody(ctx.req, this.parts.maxBodyBytes);
    const normalized = provider ? await this.normalizeProvider(channel, module, ctx, raw) : this.normalizeMessage(channel, ctx, raw);
    // A provider channel's one bucket is taken from only once its channel verified the request:
    // unsigned requests, refused above, must not use up the tokens its real webhooks need.
    if (rateLimiter && provider) await this.takeToken(rateLimiter, "provider-channel", channel, ctx);
    if ("ack" in normalized) {
      logger.debug({ event: "ingress.ack", channel, requestId: ctx.requestId }, "channel acknowledged without a turn");
      sendJson(ctx.res, normalized.status ?? 200, normalized.body ?? { ok: true });
      return;
    }
    await this.submit(channel, normalized, ctx, provider ? undefined : "Idempotency-Key");
  }

  /** Take a token of `bucket` for the request, or refuse it with 429 and Retry-After. */
  private async takeToken(rateLimiter: IngressRateLimiter, bucket: RateLimitBucket, channel: string, ctx: RequestContext): Promise<void> {
    const limited = await rateLimiter.check({ bucket, channel, method: ctx.method, path: ctx.path, headers: ctx.headers, remoteAddress: ctx.remoteAddress });
    if (!limited) return;
    this.parts.logger.info({ event: "ingress.rejected", reason: "rate_limit", bucket, channel, requestId: ctx.requestId, retryAfterMs: limited.retryAfterMs }, "rate limit reached");
    throw new HttpError(429, "AL_ERR_RATE_LIMITED", `the ${bucket} rate limit is reached for this caller`, {
      fix: "Retry after the Retry-After seconds, or raise rateLimit.limits.",
      headers: { "retry-after": String(retryAfterSeconds(limited.retryAfterMs)) },
    });
  }

  /** The default message fallback: `{ message, conversationId? }` and nothing else, deduped on Idempotency-Key. */
  private normalizeMessage(channel: string, ctx: RequestContext, raw: Buffer): ChannelTurn {
    const body = parseJsonObject(ctx.req, raw);
    const unknown = Object.keys(body).filter((field) => field !== "message" && field !== "conversationId");
    if (unknown.length > 0) {
      // Dropped silently, a field such as metadata would look accepted and change nothing.
      throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `body.${unknown[0]} is not a field of the ${channel} channel's message (it reads message and conversationId)`, {
        fix: "Send only message and conversationId, or give the channel a normalizeHttp that reads the rest into its turn (ChannelTurn.metadata).",
      });
    }
    const message = requiredString(body, "message", '{"message": "Remember to buy milk", "conversationId": "c1"}');
    const conversationId = optionalString(body, "conversationId");
    const conversationIdBytes = conversationId === undefined ? 0 : Buffer.byteLength(conversationId, "utf8");
    if (conversationIdBytes > MAX_CONVERSATION_ID_BYTES) {
      // Refused, not hashed: replies are routed by it, and a store's index refuses a key this long (500).
      throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `body.conversationId is ${conversationIdBytes} bytes; it may be at most ${MAX_CONVERSATION_ID_BYTES}`, {
        fix: "Send a shorter conversationId, such as a UUID or your own short id for the conversation.",
      });
    }
    const key = ctx.headers["idempotency-key"]?.trim();
    if (key !== undefined && Buffer.byteLength(key, "utf8") > MAX_IDEMPOTENCY_KEY_BYTES) {
      // Refused rather than shortened: the caller chose it, and can send one of a usable size.
      throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `the Idempotency-Key header is ${Buffer.byteLength(key, "utf8")} bytes; it may be at most ${MAX_IDEMPOTENCY_KEY_BYTES}`, {
        fix: "Send a shorter Idempotency-Key, such as a UUID, for each new message.",
      });
    }
    const eventId = key || `${channel}-${randomUUID()}`;
    return { eventId, conversationId: conversationId ?? "", message };
  }

  /**
   * A channel's normalizeHttp, given up after normalizeTimeoutMs: one that never answers would hold the
   * request, its connection (toward maxConnections) and every shutdown's wait for requests in flight.
   * The caller gets a 503 that shows nothing of the channel; a provider retries it.
   */
  private async normalizeInTime(channel: string, ctx: RequestContext, normalizing: AbortController, normalize: () => unknown): Promise<unknown> {
    const timeoutMs = this.parts.normalizeTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        normalizing.abort();
        this.parts.logger.warn({ event: "channel.normalize_timeout", channel, requestId: ctx.requestId, timeoutMs }, `channel ${channel}'s normalizeHttp did not answer within ${timeoutMs} ms; answered 503`);
        reject(
          new HttpError(503, "AL_ERR_CHANNEL_TIMEOUT", "the request could not be handled in time; nothing was accepted", {
            fix: "Retry shortly.",
            headers: { "retry-after": "5" },
          }),
        );
      }, timeoutMs);
    });
    try {
      return await Promise.race([normalize(), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async normalizeProvider(channel: string, module: ChannelModule, ctx: RequestContext, raw: Buffer): Promise<ChannelTurn | ChannelAck> {
    // Parsed when the channel first reads it, after it verified the request: an unsigned body, however
    // malformed, is judged by the channel's signature check (401, logged) and never read.
    let parsed: { body: JsonValue | undefined } | undefined;
    const contentType = ctx.headers["content-type"];
    const normalizing = new AbortController();
    const request: ChannelRequest = {
      method: ctx.method,
      path: ctx.path,
      query: queryRecord(ctx.query),
      url: requestedUrl(ctx),
      headers: ctx.headers,
      get body() {
        parsed ??= { body: parseProviderBody(contentType, raw) };
        return parsed.body;
      },
      rawBody: new Uint8Array(raw),
      signal: normalizing.signal,
    };
    let result: unknown;
    try {
      result = await this.normalizeInTime(channel, ctx, normalizing, () => module.normalizeHttp!(request));
    } catch (error) {
      // The body the channel read is not JSON: the caller's (400), as before the channel saw it.
      if (error instanceof HttpError) throw error;
      const status = refusalStatus(error);
      // Only a refusal the channel declares (a 4xx status) is the caller's doing, and its message is
      // written for the caller. Anything else is the channel failing (a bug, a secret it cannot read,
      // a store that is down): its message may name files, addresses or SQL, so it is logged, and the
      // caller gets the host's generic 500 (or 503 for a state outage), which a provider retries.
      if (status === undefined) throw error;
      const message = error instanceof Error ? error.message : String(error);
      this.parts.logger.warn({ event: "security.channel_rejected", channel, status, requestId: ctx.requestId, remoteAddress: ctx.remoteAddress, err: message }, "channel refused the request");
      throw new HttpError(status, "AL_ERR_CHANNEL_REJECTED", `channel ${channel} refused the request: ${message}`, { fix: "Check the provider's signing secret and the request." });
    }
    if (isAck(result)) {
      this.refuseUnsendableAnswer(channel, result, "", ctx);
      return result;
    }
    if (!isTurn(result)) {
      this.parts.logger.error({ event: "channel.turn_invalid", channel, requestId: ctx.requestId }, "normalizeHttp returned neither a turn nor an ack");
      throw new HttpError(500, "AL_ERR_CHANNEL_TURN_INVALID", `channel ${channel}'s normalizeHttp returned neither a ChannelTurn nor { ack: true }`, {
        fix: "Return { eventId, conversationId, message } (metadata and deliveryMetadata, when given, objects) or { ack: true } from normalizeHttp.",
      });
    }
    // Checked before the turn is submitted: found when answering (or when its attachments are fetched), the
    // run would be stored and every redelivery of it answered 500 (or the part dropped without a trace).
    const malformed = malformedTurnField(result);
    if (malformed !== undefined) {
      this.parts.logger.error({ event: "channel.turn_invalid", channel, field: malformed.field, requestId: ctx.requestId }, `normalizeHttp returned a turn whose ${malformed.field} is malformed`);
      throw new HttpError(500, "AL_ERR_CHANNEL_TURN_INVALID", `channel ${channel}'s normalizeHttp returned a turn whose ${malformed.field} is ${malformed.shown}, not ${malformed.expected}`, {
        fix: malformed.fix ?? `Set ${malformed.field} to ${malformed.expected}, or leave it out.`,
      });
    }
    if (result.respond !== undefined) this.refuseUnsendableAnswer(channel, result.respond, "respond.", ctx);
    return result;
  }

  /** Refuse an ack's (or a turn's respond) status or body that no HTTP answer can carry. */
  private refuseUnsendableAnswer(channel: string, answer: { status?: unknown; body?: unknown }, prefix: "" | "respond.", ctx: RequestContext): void {
    const field = !validStatus(answer.status) ? "status" : !sendableBody(answer.body) ? "body" : undefined;
    if (field === undefined) return;
    const shown = field === "status" ? JSON.stringify(answer.status) ?? String(answer.status) : "not JSON";
    this.parts.logger.error({ event: "channel.turn_invalid", channel, field: `${prefix}${field}`, requestId: ctx.requestId }, `normalizeHttp returned a ${prefix}${field} the host cannot answer with`);
    throw new HttpError(500, "AL_ERR_CHANNEL_TURN_INVALID", `channel ${channel}'s normalizeHttp returned ${prefix === "" ? "an ack" : "a turn"} whose ${prefix}${field} is ${shown}`, {
      fix: field === "status" ? `Set ${prefix}status to an integer from 200 to 599, or leave it out (200).` : `Set ${prefix}body to JSON data (objects, arrays, strings, numbers, booleans, null), or leave it out.`,
    });
  }

  /**
   * A retry of a raw route's request answers the run it started; the same Idempotency-Key on another
   * request (422, as the IETF Idempotency-Key draft and Stripe do) would otherwise be answered with
   * that run and its own message dropped. The run's stored message and conversation id, the whole of
   * the request, are what the key was used for: compared there, the check holds across processes.
   */
  private refuseReusedKey(channel: string, turn: ChannelTurn, conversationId: string | null, existing: RunRecord, ctx: RequestContext): void {
    const differs = existing.input.message !== turn.message ? "message" : existing.conversationId !== conversationId ? "conversationId" : undefined;
    if (differs === undefined) return;
    this.parts.logger.warn(
      { event: "ingress.rejected", reason: "idempotency_key_reused", channel, eventId: turn.eventId, runId: existing.id, field: differs, requestId: ctx.requestId },
      "an Idempotency-Key already used for another request",
    );
    throw new HttpError(422, "AL_ERR_IDEMPOTENCY_KEY_REUSED", `Idempotency-Key ${JSON.stringify(turn.eventId)} was used for another request to the ${channel} channel: its ${differs} differs`, {
      fix: "Send a new Idempotency-Key for each new message; retry with the same key only the same body.",
    });
  }

  /** The turn's metadata without the keys the host sets (HOST_METADATA_KEYS), which it drops with a warning. */
  private channelMetadata(channel: string, turn: ChannelTurn, ctx: RequestContext): Record<string, JsonValue> {
    const metadata = turn.metadata ?? {};
    const dropped = HOST_METADATA_KEYS.filter((key) => Object.hasOwn(metadata, key));
    if (dropped.length === 0) return metadata;
    this.parts.logger.warn(
      { event: "channel.metadata_reserved", channel, keys: dropped, requestId: ctx.requestId },
      `the turn's metadata sets ${dropped.join(", ")}, which the run's channel metadata takes from the turn's own fields: they were left out (set ChannelTurn.${dropped[0]} instead)`,
    );
    const kept = { ...metadata };
    for (const key of dropped) delete kept[key];
    return kept;
  }

  /**
   * `keyedBy` names where a raw route's event id came from (its Idempotency-Key header): such a key is
   * the caller's, who may reuse it by mistake, so a duplicate must be the same request as the first.
   */
  private async submit(channel: string, turn: ChannelTurn, ctx: RequestContext, keyedBy?: "Idempotency-Key"): Promise<void> {
    const { runtime, mailbox, watcher, logger, model } = this.parts;
    const conversationId = turn.conversationId === "" ? null : turn.conversationId;
    const waitSeconds = parseWait(ctx.query.get("wait"));
    const reservation = mailbox.reserve(conversationId);
    if (!("release" in reservation)) {
      logger.info(
        { event: "ingress.rejected", reason: "capacity", channel, requestId: ctx.requestId, executing: reservation.active, waiting: reservation.waiting, retryAfterMs: reservation.retryAfterMs },
        "at maxConcurrentRuns with a full mailbox",
      );
      throw new HttpError(429, "AL_ERR_RUN_CAPACITY", `${reservation.active} runs are executing and ${reservation.waiting} are waiting, the configured maximum`, {
        fix: "Retry after the Retry-After seconds, or raise maxConcurrentRuns / maxQueuedRuns.",
        headers: { "retry-after": String(retryAfterSeconds(reservation.retryAfterMs)) },
      });
    }
    let runId: string;
    let created: boolean;
    // A new run that waits for no wait?=0 and no provider answer is watched from before it starts,
    // or, when this request drives it, waited on through its drive.
    const waiting = waitSeconds > 0 && !turn.respond;
    let watch: ReturnType<RunWatcher["watch"]> | undefined;
    /** The drive of a run this request started itself and waits on, when it did. */
    let drive: Promise<RunResult> | undefined;
    const attachments = turn.attachments?.length ?? 0;
    try {
      // A channel module's user, attachments and metadata are made plain JSON; the event id is a checked string.
      const moduleFields = turn.user !== undefined || attachments > 0 || turn.metadata !== undefined;
      const metadata = moduleFields
        ? jsonRecord({
            ...this.channelMetadata(channel, turn, ctx),
            eventId: turn.eventId,
            ...(turn.user ? { user: turn.user } : {}),
            ...(attachments > 0 ? { attachments: turn.attachments } : {}),
          })
        : { eventId: turn.eventId };
      // The reply's secrets sit beside the channel metadata (which the model context renders), never in it.
      const delivery = turn.deliveryMetadata !== undefined ? jsonRecord(turn.deliveryMetadata) : undefined;
      const input = {
        message: turn.message,
        ...(conversationId !== null ? { conversationId } : {}),
        metadata: turn.metadata ? jsonRecord(turn.metadata) : {},
        idempotencyKey: runIdempotencyKey(channel, turn.eventId),
        channel: { name: channel, metadata, ...(delivery ? { delivery } : {}) },
        ...(model ? { model } : {}),
      };
      if (reservation.startsNow && conversationId === null && attachments === 0) {
        // No conversation to keep in order and nothing to prepare: stored leased to this process and
        // driven at once, as runtime.run() does, without a read of the run or a second write for its lease.
        const started = await runtime.submitAndStart(input);
        ({ runId, created } = started);
        if (started.created) {
          mailbox.adopt(runId, started.result);
          if (waiting) drive = started.result;
        }
      } else {
        ({ runId, created } = await runtime.submit(input, { observe: !reservation.startsNow }));
        if (created && waiting) watch = watcher.watch(runId);
        if (created) mailbox.enqueue(runId, conversationId, { prepare: attachments > 0 });
      }
      if (!created) {
        const existing = await runtime.state.runs.getRun(runId);
        // Runs are deduped on the event id across the whole store: in a store shared with other agents, the
        // run an event id names may be another agent's, whose reply this caller must not be answered with.
        if (existing && !isRunOfAgent(existing, runtime.manifest.agent.id)) {
          logger.warn({ event: "ingress.event_taken", channel, eventId: turn.eventId, requestId: ctx.requestId }, "the event id already started a run of another agent in this state store");
          throw new HttpError(409, "AL_ERR_INGRESS_EVENT_TAKEN", `event ${turn.eventId} of channel ${channel} already started a run of another agent in this state store`, {
            fix: "Send the turn under an event id (Idempotency-Key) of its own: agents that share a state store share its event ids.",
          });
        }
        if (existing && keyedBy) this.refuseReusedKey(channel, turn, conversationId, existing, ctx);
        // A duplicate of a run queued by a process that died is adopted here, by the sweep's rule: a younger
        // one may wait in the mailbox of the live replica that accepted it, behind an earlier turn of its
        // conversation, and started here it would run beside that turn. It is left to that replica, or the sweep.
        if (existing?.status === "queued" && isQueuedRunAdoptable(existing, new Date(), this.parts.adoptQueuedAfterMs)) {
          mailbox.enqueue(runId, conversationId, { prepare: true });
        }
      }
    } finally {
      reservation.release();
    }
    logger.info(
      { event: created ? "ingress.accepted" : "ingress.duplicate", channel, runId, eventId: turn.eventId, conversationId, requestId: ctx.requestId },
      created ? "turn accepted" : "duplicate event; returning the run it started",
    );
    if (turn.respond) {
      // The provider expects its own answer (e.g. a deferred response); the reply follows through deliver().
      sendJson(ctx.res, turn.respond.status ?? 200, turn.respond.body ?? { ok: true });
      return;
    }
    const waitMs = waitSeconds * 1000;
    const result = drive ? await watcher.untilDriven(runId, drive, waitMs) : watch ? await watch.rested(waitMs) : await watcher.waitForRest(runId, waitMs);
    const rested = result.status !== "queued" && result.status !== "running";
    // Object.assign, not a spread followed by keys the result lacks: V8 gives every object built that way a map
    // of its own, which costs a slow path to build and another to stringify, on every request.
    const body = Object.assign({}, result, { conversationId, duplicate: !created, run: `/runs/${encodeURIComponent(runId)}` });
    sendJson(ctx.res, waitSeconds > 0 && rested ? 200 : created ? 202 : 200, body);
  }
}

/**
 * Keys of a run's channel metadata the host sets from the turn itself. A turn's `metadata` often
 * carries provider data (a Slack event has its own `user`), which must not choose the event id the
 * run is known by, the user, or which URLs the host downloads as its attachments.
 */
const HOST_METADATA_KEYS = ["eventId", "user", "attachments"] as const;

/** The longest Idempotency-Key a raw route takes, in UTF-8 bytes: as IETF's draft and Stripe allow, far under any store's index limit. */
const MAX_IDEMPOTENCY_KEY_BYTES = 255;

/**
 * The longest conversation id a turn may carry, in UTF-8 bytes. Stores index runs by it, and
 * PostgreSQL's index refuses a key much over 2.7 kB; it cannot be hashed, as channels route replies by it.
 */
const MAX_CONVERSATION_ID_BYTES = 512;

/**
 * The run's idempotency key for a turn: `<channel>:<event id>`, or, when that is longer than
 * MAX_IDEMPOTENCY_KEY_BYTES, the event id's SHA-256 in its place. A provider's event id is not the
 * caller's to shorten, and a long one must still dedupe on every store: PostgreSQL's unique index
 * refuses a key of more than about 2.7 kB.
 */
function runIdempotencyKey(channel: string, eventId: string): string {
  const key = `${channel}:${eventId}`;
  if (Buffer.byteLength(key, "utf8") <= MAX_IDEMPOTENCY_KEY_BYTES) return key;
  return `${channel}:sha256:${createHash("sha256").update(eventId, "utf8").digest("hex")}`;
}

/** A parameter given once is a string, one given more than once its values in order. */
function queryRecord(query: URLSearchParams): Record<string, string | string[]> {
  // No prototype: a parameter named __proto__ is a key like any other.
  const record = Object.create(null) as Record<string, string | string[]>;
  for (const [key, value] of query) {
    const seen = record[key];
    record[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return record;
}

/** The path and query as the caller sent them: a provider's signature covers those bytes, not a re-encoding. */
function requestedUrl(ctx: RequestContext): string {
  const target = ctx.req.url ?? "/";
  if (target.startsWith("/")) return target;
  // An absolute-form target (through a proxy), which the router already read as an http(s) URL.
  const absolute = new URL(target);
  return `${absolute.pathname}${absolute.search}`;
}

/** The 4xx status a thrown refusal declares (`status` or `statusCode`), if it declares one. */
function refusalStatus(error: unknown): number | undefined {
  const declared = (error as { status?: unknown; statusCode?: unknown } | null)?.status ?? (error as { statusCode?: unknown } | null)?.statusCode;
  // A number, or its digits as a string ("401"), as channels have declared it.
  const status = typeof declared === "string" && /^\d{3}$/.test(declared) ? Number(declared) : declared;
  return typeof status === "number" && Number.isInteger(status) && status >= 400 && status < 500 ? status : undefined;
}

/** Provider bodies: JSON or form-encoded are parsed; anything else reaches normalizeHttp as rawBody only. */
function parseProviderBody(contentType: string | undefined, raw: Buffer): JsonValue | undefined {
  if (raw.length === 0) return undefined;
  if (isJsonContentType(contentType)) {
    try {
      return JSON.parse(raw.toString("utf8")) as JsonValue;
    } catch (error) {
      throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `the body is not valid JSON: ${(error as Error).message}`, { fix: "Send valid JSON." });
    }
  }
  if (contentType?.split(";")[0]!.trim().toLowerCase() === "application/x-www-form-urlencoded") {
    return Object.fromEntries(new URLSearchParams(raw.toString("utf8")));
  }
  return undefined;
}

function isAck(value: unknown): value is ChannelAck {
  return typeof value === "object" && value !== null && (value as ChannelAck).ack === true;
}

function isTurn(value: unknown): value is ChannelTurn {
  const turn = value as ChannelTurn;
  return (
    typeof value === "object" &&
    value !== null &&
    typeof turn.eventId === "string" &&
    turn.eventId !== "" &&
    typeof turn.conversationId === "string" &&
    typeof turn.message === "string" &&
    (turn.attachments === undefined || Array.isArray(turn.attachments)) &&
    (turn.metadata === undefined || isPlainRecord(turn.metadata)) &&
    (turn.deliveryMetadata === undefined || isPlainRecord(turn.deliveryMetadata))
  );
}

/**
 * The first part of a turn that is not what ChannelTurn says it is: `conversationId` at most
 * MAX_CONVERSATION_ID_BYTES, `respond` an object, `user`
 * `{ id: string, name?: string }`, each attachment at least `{ id: string }` (the id the host stores it
 * under, and records it by in attachment.stored or attachment.failed).
 */
function malformedTurnField(turn: ChannelTurn): { field: string; shown: string; expected: string; fix?: string } | undefined {
  const shown = (value: unknown) => (value === undefined ? "missing" : (JSON.stringify(value) ?? String(value)).slice(0, 80));
  const conversationIdBytes = Buffer.byteLength(turn.conversationId, "utf8");
  if (conversationIdBytes > MAX_CONVERSATION_ID_BYTES) {
    return { field: "conversationId", shown: `${conversationIdBytes} bytes`, expected: `at most ${MAX_CONVERSATION_ID_BYTES} bytes of UTF-8`, fix: `Return a conversationId of at most ${MAX_CONVERSATION_ID_BYTES} bytes, such as the provider's id for the chat or thread.` };
  }
  if (turn.respond !== undefined && !isPlainRecord(turn.respond)) return { field: "respond", shown: shown(turn.respond), expected: "an object { status?, body? }" };
  if (turn.user !== undefined) {
    if (!isPlainRecord(turn.user)) return { field: "user", shown: shown(turn.user), expected: "an object { id, name? }" };
    if (typeof turn.user.id !== "string") return { field: "user.id", shown: shown(turn.user.id), expected: "a string" };
    if (turn.user.name !== undefined && typeof turn.user.name !== "string") return { field: "user.name", shown: shown(turn.user.name), expected: "a string" };
  }
  for (const [index, attachment] of (turn.attachments ?? []).entries()) {
    if (!isPlainRecord(attachment)) return { field: `attachments[${index}]`, shown: shown(attachment), expected: "an object { id, url?, filename?, contentType?, size? }" };
    if (typeof attachment.id !== "string") return { field: `attachments[${index}].id`, shown: shown(attachment.id), expected: "a string" };
  }
  return undefined;
}

/** A status the host may answer a provider with: left out (200), or an integer from 200 to 599. */
function validStatus(status: unknown): boolean {
  return status === undefined || (typeof status === "number" && Number.isInteger(status) && status >= 200 && status <= 599);
}

/** A body sendJson can write: left out, or a value JSON.stringify turns into text. */
function sendableBody(body: unknown): boolean {
  if (body === undefined) return true;
  try {
    return typeof JSON.stringify(body) === "string";
  } catch {
    return false;
  }
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Provider data may hold undefined or non-JSON values; the run input must be plain JSON. */
function jsonRecord(value: object): Record<string, JsonValue> {
  return JSON.parse(JSON.stringify(value)) as Record<string, JsonValue>;
}
