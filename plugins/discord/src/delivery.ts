import { createHash } from "node:crypto";
import { REST, DiscordAPIError, HTTPError, RateLimitError, type RateLimitData } from "@discordjs/rest";
import { AssemblyLineError, finalDeliveryFailure, retryDeliveryAfter, type ChannelDelivery } from "@assemblyline-agents/core";
import { deliveryMetadata, type DiscordDeliveryMetadata } from "./interaction.js";
import { attemptSignal, untilAborted } from "./attempt-signal.js";
import { apiBaseUrl, botToken, type ResolvedDiscordOptions } from "./options.js";
import { splitMessage } from "./split-message.js";

/** What an empty reply is shown as: Discord refuses a message without content. */
export const EMPTY_REPLY = "(no reply)";

/** What the user sees in place of the reply when the run failed. */
export const FAILURE_REPLY = "Sorry, something went wrong and this request could not be completed.";

/**
 * How long one delivery may take, rate-limit waits included: under the Node
 * host outbox's deliver timeout (20 s by default), so an attempt has stopped
 * sending before the outbox gives up on it and tries again.
 */
export const DELIVERY_BUDGET_MS = 15_000;

/** Discord's answers that the interaction's token no longer works: it expired (15 minutes) or is unknown. */
const TOKEN_GONE_CODES = new Set([10015 /* Unknown Webhook */, 50027 /* Invalid Webhook Token */]);

/** Discord's answer to a message that is gone: on `@original`, the user deleted the deferred response. */
const UNKNOWN_MESSAGE = 10008;

/**
 * Discord's answers to the bot that no retry can mend: the channel is gone, or the bot may not see it or post
 * in it. The outbox then fails the delivery at once instead of trying 8 times over an hour.
 */
const CHANNEL_REFUSED_CODES = new Set([10003 /* Unknown Channel */, 50001 /* Missing Access */, 50013 /* Missing Permissions */]);

/** Discord's answers, on the webhook or to the bot, that no retry can mend either, with what to do about each. */
const REFUSALS = new Map<number, string>([
  [
    40094, // This interaction has hit the maximum number of follow up messages
    "The reply was too long for this app here: Discord lets a user-installed app that is not in the server send only 5 follow-up messages per interaction. Add the app to the server, or have the agent answer in at most 6 messages.",
  ],
  [
    50007, // Cannot send messages to this user
    "Discord refuses messages to this user (they blocked the app, closed their direct messages, or share no server with the bot); no retry gets this reply to them.",
  ],
  [
    50083, // Invalid action on archived thread
    "The thread the interaction came from is archived or locked: unarchive it in Discord for later replies; no retry delivers into it.",
  ],
]);

/** Discord's flag on a deferred response not yet edited ("thinking..."). */
const MESSAGE_FLAG_LOADING = 1 << 7;

/** An interaction token lives 15 minutes after the interaction. */
const TOKEN_LIFETIME_MS = 15 * 60_000;

/**
 * With a bot token, a delivery starting this long before the interaction's token expires goes out through the
 * bot at once: an attempt takes at most DELIVERY_BUDGET_MS, so one begun on the webhook ends before the token
 * does, even with our clock 45 s behind Discord's, and no reply is split between the webhook and the bot.
 */
const TOKEN_MARGIN_MS = 60_000;

/**
 * How long a reply's progress is remembered in this process: past the outbox's retries of it, since the bot, taking
 * over once the token expired, sends only the parts the webhook has not.
 */
const PROGRESS_MS = 2 * 60 * 60_000;

/** Discord's longest message nonce, in characters. */
const NONCE_LIMIT = 25;

/** Discord's epoch (2015-01-01), the zero of a snowflake's timestamp. */
const DISCORD_EPOCH_MS = 1_420_070_400_000;

/** Messages already sent for a reply, in this process. */
interface Progress {
  text: string;
  sent: number;
  at: number;
}

/** The reply's chunks the user already sees from the interaction's webhook: indexes `from` up to `to` (excluded). */
interface ChunksShown {
  from: number;
  to: number;
}

const NO_CHUNK_SHOWN: ChunksShown = { from: 0, to: 0 };

/** The bot's progress on a reply: which chunks it leaves out (the same on every retry here), and how many of its parts are sent. */
interface BotProgress extends Progress {
  shown: ChunksShown;
}

/** One channel message of the bot's. */
interface BotPart {
  content: string;
  nonce: string;
  /** The user it mentions, in the part that names them. */
  mention: string | undefined;
}

/** What one attempt works with, whichever way the reply goes out. */
interface Attempt {
  delivery: ChannelDelivery;
  target: DiscordDeliveryMetadata;
  webhook: `/webhooks/${string}`;
  text: string;
  /** The client for the interaction's webhook (`auth: false`, not bound by the bot's global rate limit). */
  webhookRest: REST;
  /** The client for the bot's channel messages, apart from the webhook's, so the bot's global 429 holds back only the bot. */
  botRest: REST;
  signal: AbortSignal;
  call<T>(request: Promise<T>): Promise<T>;
}

/**
 * Delivers replies through the interaction's follow-up webhook. A reply that
 * fits one message replaces the deferred "thinking..." response (PATCH
 * .../messages/@original, idempotent). A longer one is sent as follow-up
 * messages first and the original is edited last, so an original that already
 * shows the first chunk means the whole reply went out. In between, the
 * original shows how many follow-ups are out (progressJournal), so a delivery
 * retried after a crash, in any process, reads it (GET .../messages/@original)
 * and sends only what is missing. The count is written before the first
 * follow-up too: Discord makes a follow-up to a still-loading deferred response
 * an edit of it, not a new message. @discordjs/rest honours Discord's
 * rate-limit headers (X-RateLimit-* per bucket, the global limit, 429
 * Retry-After), with two clients per API base shared by every delivery: one for
 * the interaction webhooks, one for the bot, since Discord does not bind
 * interaction endpoints to the bot's global rate limit and @discordjs/rest
 * applies a 429 marked global to every request of its client. A wait past
 * the delivery's budget fails it at once instead, telling the outbox to retry
 * no sooner than the wait is over (retryDeliveryAfter): the outbox's stored
 * retry time holds in every process, so no replica hits Discord early, which
 * counts toward its invalid-request ban. Mentions are never parsed: a reply
 * cannot ping @everyone.
 *
 * Two ways around a webhook that cannot carry the reply: an original the user deleted (10008 on @original)
 * gets the whole reply as follow-ups; a token that expired (by the interaction's time, or Discord answering
 * 50027/10015) gets it as channel messages from the bot (`POST /channels/{id}/messages`, Bot auth), each
 * carrying a nonce Discord enforces, when a bot token is set (botTokenEnv). The bot sends only the chunks the
 * webhook is not known to have sent: known from this process's progress, or from the original's count while the
 * token can still read it. What stays: a retry in another process after the token expired cannot read the count,
 * so it sends the follow-ups already out again (unless Discord's nonce window returns the bot's own earlier
 * parts), and the original keeps showing the count.
 */
export class DiscordDelivery {
  /** Per API base and kind of route (the interaction webhooks, the bot): its own client, with its own rate-limit state. */
  private readonly clients = new Map<string, REST>();
  /** Per interaction webhook path: follow-ups sent (through the original, or alone once it is deleted), kept for the bot too. */
  private readonly progress = new Map<string, Progress>();
  /** Per channel and delivery: the bot's messages sent, kept longer than a token lives. */
  private readonly channelProgress = new Map<string, BotProgress>();
  /** Per attempt under way: the routes it sends on, and when it must be done. */
  private readonly deadlines = new Set<{ routes: string[]; deadline: number }>();
  /** Per interaction webhook path: the attempt under way. */
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly options: ResolvedDiscordOptions) {}

  async deliver(delivery: ChannelDelivery): Promise<void> {
    const target = deliveryMetadata(delivery);
    if (!target) {
      // Nothing to reply to now means nothing to reply to on any retry: the outbox fails it at once.
      throw finalDeliveryFailure(
        new AssemblyLineError("AL_ERR_DISCORD_DELIVERY", `run ${delivery.runId} has no Discord interaction to reply to (its delivery metadata lacks the interaction token)`, {
          fix: "Only runs started by a Discord interaction can be delivered through this channel.",
        }),
      );
    }
    const webhook = `/webhooks/${encodeURIComponent(target.applicationId)}/${encodeURIComponent(target.interactionToken)}` as const;
    // One attempt per interaction at a time: a retry waits for one still sending, then goes on from its progress.
    const previous = this.inFlight.get(webhook);
    const attempt = (previous ? previous.catch(() => undefined) : Promise.resolve()).then(() => this.send(delivery, target, webhook));
    this.inFlight.set(webhook, attempt);
    try {
      await attempt;
    } finally {
      if (this.inFlight.get(webhook) === attempt) this.inFlight.delete(webhook);
    }
  }

  private async send(delivery: ChannelDelivery, target: DiscordDeliveryMetadata, webhook: `/webhooks/${string}`): Promise<void> {
    const text = delivery.text.trim() === "" ? EMPTY_REPLY : delivery.text;
    const webhookRest = this.client("webhook");
    const botRest = this.client("bot");
    // The host's abort (its deliver timeout) or this channel's own budget, whichever comes first.
    const budget = attemptSignal(delivery.signal, DELIVERY_BUDGET_MS);
    const signal = budget.signal;
    // Settle when the attempt is over even while the client still sleeps out a wait, so the next one is not stuck behind it.
    const call = <T>(request: Promise<T>): Promise<T> => untilAborted(request, signal);
    const attempt: Attempt = { delivery, target, webhook, text, webhookRest, botRest, signal, call };
    const channel = channelRoute(target);
    const deadline = { routes: channel ? [webhook, channel] : [webhook], deadline: Date.now() + DELIVERY_BUDGET_MS };
    this.deadlines.add(deadline);
    this.forgetExpired();
    // Read per attempt, like the other env variables: a token set after boot counts from the next retry.
    const bot = botToken(this.options);
    try {
      if (bot !== undefined && channel && tokenExpiresWithin(target, TOKEN_MARGIN_MS)) {
        const shown = await this.shownThroughWebhook(attempt);
        if (shown === "whole reply") return;
        return await this.toChannel(attempt, bot, shown);
      }
      try {
        await this.toInteraction(attempt);
      } catch (error) {
        if (bot === undefined || !channel || !(error instanceof DiscordAPIError && TOKEN_GONE_CODES.has(Number(error.code)))) throw error;
        await this.toChannel(attempt, bot, this.shownAsRemembered(attempt));
      }
    } catch (error) {
      throw this.failure(error, attempt, bot);
    } finally {
      budget.clear();
      this.deadlines.delete(deadline);
    }
  }

  /**
   * In the token's last minute, what earlier attempts delivered through the webhook: the whole reply, when the
   * original shows its final edit (neither "thinking..." nor a count; a crash before the outbox recorded it), so
   * the bot has nothing to send; else the follow-ups its count says are out, or this process remembers. Past the
   * 15 minutes the webhook can no longer read the original, and only this process's memory tells.
   */
  private async shownThroughWebhook(attempt: Attempt): Promise<ChunksShown | "whole reply"> {
    const { target, text } = attempt;
    const remembered = this.shownAsRemembered(attempt);
    if (tokenExpiresWithin(target, 0)) return remembered;
    try {
      const original = await this.readOriginal(attempt, progressJournal(chunksOf(text, this.options.messageLimit)));
      if (original === "whole reply") return original;
      // The original is there, so follow-ups went out below it: chunks 1 to the count.
      const counted = Math.max(original.counted, remembered.from === 1 ? remembered.to - 1 : 0);
      return { from: 1, to: counted + 1 };
    } catch (error) {
      // The token or the original is gone (the bot sends what is not known to be out), or Discord failed (the outbox tries again).
      if (error instanceof DiscordAPIError && (TOKEN_GONE_CODES.has(Number(error.code)) || Number(error.code) === UNKNOWN_MESSAGE)) return remembered;
      throw error;
    }
  }

  /** The chunks this process sent through the webhook: follow-ups below the original, or from the first once it was deleted. */
  private shownAsRemembered({ webhook, text }: Attempt): ChunksShown {
    const alone = this.progress.get(followupsKey(webhook));
    if (alone?.text === text) return { from: 0, to: alone.sent };
    const belowOriginal = this.progress.get(webhook);
    if (belowOriginal?.text === text) return { from: 1, to: belowOriginal.sent + 1 };
    return NO_CHUNK_SHOWN;
  }

  /**
   * The original as earlier attempts left it: its final edit ("whole reply"), or the count of follow-ups it shows
   * and whether Discord still shows it loading. Only this channel edits the original: anything there but
   * "thinking..." (empty, LOADING) or a count is the final edit. Not compared with the first chunk: Discord trims
   * what it stores and strips characters it deems invalid.
   */
  private async readOriginal({ webhook, webhookRest: rest, signal, call }: Attempt, journal: ProgressJournal): Promise<"whole reply" | { counted: number; loading: boolean }> {
    const current = (await call(rest.get(`${webhook}/messages/@original`, { auth: false, signal }))) as { content?: unknown; flags?: unknown };
    const shown = typeof current.content === "string" ? current.content : "";
    const loading = (Number(current.flags ?? 0) & MESSAGE_FLAG_LOADING) !== 0;
    if (!loading && shown.trim() !== "" && !journal.isCount(shown)) return "whole reply";
    return { counted: journal.read(shown), loading };
  }

  /** Through the interaction's webhook: the original response, with follow-ups for a long reply; follow-ups alone once the original is deleted. */
  private async toInteraction(attempt: Attempt): Promise<void> {
    try {
      await this.editOriginal(attempt);
    } catch (error) {
      if (!(error instanceof DiscordAPIError && Number(error.code) === UNKNOWN_MESSAGE && error.url.includes("/messages/@original"))) throw error;
      // Follow-ups sent below an original deleted since are not counted: the reply goes out whole, in order.
      this.progress.delete(attempt.webhook);
      await this.toFollowups(attempt);
    }
  }

  private async editOriginal(attempt: Attempt): Promise<void> {
    const { webhook, text, webhookRest: rest, signal, call } = attempt;
    const chunks = chunksOf(text, this.options.messageLimit);
    const original = `${webhook}/messages/@original` as const;
    if (chunks.length > 1) {
      const journal = progressJournal(chunks);
      // What an attempt elsewhere (before a crash) left in the original: the whole reply (its last step), or
      // how many follow-ups it had sent. This process may know of one more: a follow-up whose journal edit failed.
      const shown = await this.readOriginal(attempt, journal);
      if (shown === "whole reply") return;
      const remembered = this.progress.get(webhook);
      const progress: Progress = { text, sent: Math.max(shown.counted, remembered?.text === text ? remembered.sent : 0), at: remembered?.at ?? Date.now() };
      this.progress.set(webhook, progress);
      // Discord makes a follow-up to a deferred response still loading an edit of it, not a new message (which the
      // final edit would then overwrite): the count, at 0, goes there first, so every follow-up is a message of its own.
      if (shown.loading) await call(rest.patch(original, { body: message(journal.write(0)), auth: false, signal }));
      for (let index = progress.sent + 1; index < chunks.length; index += 1) {
        await call(rest.post(webhook, { body: message(chunks[index]!), auth: false, signal }));
        progress.sent = index;
        // Recorded where any process can read it, before the next one goes out; after the last, the original's final edit says it all.
        if (index < chunks.length - 1) await call(rest.patch(original, { body: message(journal.write(index)), auth: false, signal }));
      }
    }
    await call(rest.patch(original, { body: message(chunks[0]!), auth: false, signal }));
    this.progress.delete(webhook);
  }

  /**
   * The original is deleted: every chunk as a follow-up, in order. Discord's webhooks take no idempotency key and
   * the original, where the count was kept, is gone, so only this process knows how many went out: a retry here
   * sends the rest; a retry in another process, after a crash, sends the whole reply again.
   */
  private async toFollowups({ webhook, text, webhookRest: rest, signal, call }: Attempt): Promise<void> {
    const chunks = chunksOf(text, this.options.messageLimit);
    const key = followupsKey(webhook);
    const remembered = this.progress.get(key);
    const progress: Progress = { text, sent: remembered?.text === text ? remembered.sent : 0, at: remembered?.at ?? Date.now() };
    this.progress.set(key, progress);
    for (let index = progress.sent; index < chunks.length; index += 1) {
      await call(rest.post(webhook, { body: message(chunks[index]!), auth: false, signal }));
      progress.sent = index + 1;
    }
    this.progress.delete(key);
  }

  /**
   * The interaction's token expired: the reply as channel messages from the bot, all but the chunks the user already
   * sees from the webhook (`shown`); the first chunk starts with a mention of who asked. Each part carries a nonce
   * made of the delivery's id and its chunk's index, which Discord enforces (enforce_nonce): a part sent again
   * within Discord's nonce window returns the message made before instead of a second one, whichever chunks an
   * attempt left out. This process also remembers how many parts went out, so its own retries send only the rest,
   * however late.
   */
  private async toChannel(attempt: Attempt, bot: string, shown: ChunksShown): Promise<void> {
    const { delivery, target, text, botRest: rest, signal, call } = attempt;
    const route = channelRoute(target)!;
    const key = `${route}#${delivery.deliveryId}`;
    const remembered = this.channelProgress.get(key);
    // A retry here leaves out what the first attempt did: once the token expired, nothing else tells what the webhook sent.
    const progress: BotProgress = remembered?.text === text ? remembered : { text, shown, sent: 0, at: Date.now() };
    this.channelProgress.set(key, progress);
    const parts = this.botParts(attempt, progress.shown);
    for (let index = progress.sent; index < parts.length; index += 1) {
      const { content, nonce, mention } = parts[index]!;
      const body = {
        content,
        // Only the user who asked, and only in the part that names them: nothing else in the reply pings anyone.
        allowed_mentions: mention ? { parse: [], users: [mention] } : { parse: [] },
        nonce,
        enforce_nonce: true,
      };
      await call(rest.post(route, { body, auth: false, headers: { Authorization: `Bot ${bot}` }, signal }));
      progress.sent = index + 1;
    }
    this.channelProgress.delete(key);
  }

  /**
   * The bot's messages for a reply: the webhook's chunks but those shown, cut the same way in every attempt, so a
   * part's nonce names the same text whichever were left out. The first chunk starts with a mention of who asked,
   * and is split again if that makes it too long.
   */
  private botParts({ delivery, target, text }: Attempt, shown: ChunksShown): BotPart[] {
    const mention = typeof target.userId === "string" && /^\d{1,20}$/.test(target.userId) ? target.userId : userOf(delivery);
    const parts: BotPart[] = [];
    for (const [index, chunk] of chunksOf(text, this.options.messageLimit).entries()) {
      if (index >= shown.from && index < shown.to) continue;
      if (index > 0 || !mention) {
        parts.push({ content: chunk, nonce: nonceOf(delivery.deliveryId, index), mention: undefined });
        continue;
      }
      for (const [piece, content] of chunksOf(`<@${mention}> ${chunk}`, this.options.messageLimit).entries()) {
        parts.push({ content, nonce: nonceOf(delivery.deliveryId, index, piece), mention: piece === 0 ? mention : undefined });
      }
    }
    return parts;
  }

  /** The error the outbox gets: retried, retried after Discord's wait, or final. No `cause`: Discord's errors carry the request URL, and with it the interaction token. */
  private failure(error: unknown, { delivery, target }: Attempt, bot: string | undefined): AssemblyLineError {
    const what = `delivering run ${delivery.runId}'s reply to Discord failed: ${describeFailure(error, delivery.signal)}`;
    const code = error instanceof DiscordAPIError ? Number(error.code) : undefined;
    const asBot = error instanceof DiscordAPIError && error.url.includes("/channels/");
    if (code !== undefined && TOKEN_GONE_CODES.has(code)) {
      const fix =
        bot === undefined
          ? `The interaction's token expires 15 minutes after the interaction, so a reply later than that (a long run, or one paused for an approval or a question) needs a bot token: set ${this.options.botTokenEnv} to the application's bot token, with the bot in the channel and allowed to send messages there.`
          : `The interaction's token expired and the interaction names no channel the bot (${this.options.botTokenEnv}) could post the reply in.`;
      const why = bot === undefined ? `; the interaction's token expired, and a reply later than its 15 minutes needs ${this.options.botTokenEnv}, which is not set` : "";
      return finalDeliveryFailure(new AssemblyLineError("AL_ERR_DISCORD_DELIVERY", `${what}${why}`, { fix }));
    }
    const refusal = code === undefined ? undefined : REFUSALS.get(code);
    if (refusal !== undefined) return finalDeliveryFailure(new AssemblyLineError("AL_ERR_DISCORD_DELIVERY", what, { fix: refusal }));
    if (asBot && code !== undefined && CHANNEL_REFUSED_CODES.has(code)) {
      return finalDeliveryFailure(
        new AssemblyLineError("AL_ERR_DISCORD_DELIVERY", `${what} (posting as the bot in channel ${target.channelId ?? "?"})`, {
          fix: "Add the bot to the server and let it view the channel and send messages there: replies later than 15 minutes after the interaction are the bot's channel messages.",
        }),
      );
    }
    const fix =
      asBot && error instanceof DiscordAPIError && error.status === 401
        ? `Discord refused the bot token in ${this.options.botTokenEnv}: set it to the bot token from the developer portal (Bot, Reset Token). The outbox retries with backoff.`
        : "The outbox retries with backoff, or once the wait Discord asked for is over; an interaction token expires 15 minutes after the interaction.";
    const failure = new AssemblyLineError("AL_ERR_DISCORD_DELIVERY", what, { fix });
    // Discord said how long to wait (in the bucket's reset or in Retry-After alone): the next attempt waits it out.
    if (error instanceof RateLimitError) return retryDeliveryAfter(failure, rateLimitWait(error));
    return failure;
  }

  private forgetExpired(): void {
    const oldest = Date.now() - PROGRESS_MS;
    for (const progresses of [this.progress, this.channelProgress]) for (const [key, progress] of progresses) if (progress.at < oldest) progresses.delete(key);
  }

  private client(kind: "webhook" | "bot"): REST {
    const base = apiBaseUrl(this.options);
    const key = `${kind} ${base}`;
    let rest = this.clients.get(key);
    if (!rest) {
      // No retries of its own for failures: the outbox retries with backoff. 429s are waited out, within the delivery's budget.
      rest = new REST({ version: "10", api: base, retries: 0, timeout: DELIVERY_BUDGET_MS, rejectOnRateLimit: (limit) => this.waitTooLong(limit) });
      this.clients.set(key, rest);
    }
    return rest;
  }

  /** A rate-limit wait that would end past the delivery's budget fails it now (RateLimitError). */
  private waitTooLong(limit: RateLimitData): boolean {
    const path = new URL(limit.url).pathname;
    // Attempts to one channel share its bucket: the wait must fit the soonest deadline among them.
    let soonest = Infinity;
    for (const { routes, deadline } of this.deadlines) if (routes.some((route) => path.includes(route))) soonest = Math.min(soonest, deadline);
    return Date.now() + rateLimitWait(limit) > soonest;
  }
}

/** How long Discord asked to wait, in ms: a 429 may name it only in Retry-After (a shared or Cloudflare limit), not in the bucket's reset. */
function rateLimitWait(limit: RateLimitData): number {
  return Math.max(limit.timeToReset, limit.retryAfter, limit.sublimitTimeout);
}

function message(content: string) {
  return { content, allowed_mentions: { parse: [] } };
}

/** The reply's chunks; a run of whitespace longer than a message would be a chunk of its own, which Discord refuses as empty. */
function chunksOf(text: string, limit: number): string[] {
  return splitMessage(text, limit).filter((chunk) => chunk.trim() !== "");
}

/** Where this process counts the follow-ups sent once the original is deleted (from the first chunk, not the second). */
function followupsKey(webhook: `/webhooks/${string}`): string {
  return `${webhook}#followups`;
}

function channelRoute(target: DiscordDeliveryMetadata): `/channels/${string}/messages` | undefined {
  return target.channelId ? `/channels/${encodeURIComponent(target.channelId)}/messages` : undefined;
}

/** Whether the interaction's token has expired, or will within `marginMs` (its id is a snowflake holding its time); false for an id that is not one. */
function tokenExpiresWithin(target: DiscordDeliveryMetadata, marginMs: number): boolean {
  if (!/^\d{1,20}$/.test(target.interactionId ?? "")) return false;
  const createdAt = Number(BigInt(target.interactionId) >> 22n) + DISCORD_EPOCH_MS;
  return Date.now() >= createdAt + TOKEN_LIFETIME_MS - marginMs;
}

/** The user who asked, from the host's channel metadata, for runs queued before the Discord metadata kept it. */
function userOf(delivery: ChannelDelivery): string | undefined {
  const id = (delivery.metadata?.user as { id?: unknown } | undefined)?.id;
  return typeof id === "string" && /^\d{1,20}$/.test(id) ? id : undefined;
}

/**
 * The nonce of the bot's part of a reply: chunk `chunk` of the webhook's cut, and its piece `piece` when the mention
 * made the first chunk too long. The same for every attempt at this delivery, in any process, whichever chunks it
 * leaves out, and different for every part and every other delivery; at most Discord's 25 characters (a digest of
 * the delivery's id, the indexes).
 */
export function nonceOf(deliveryId: string, chunk: number, piece = 0): string {
  const suffix = `.${chunk}.${piece}`;
  return createHash("sha256").update(deliveryId).digest("hex").slice(0, NONCE_LIMIT - suffix.length) + suffix;
}

/** A failure without the interaction token (it is in the request URL). */
function describeFailure(error: unknown, host: AbortSignal): string {
  if (error instanceof DiscordAPIError) return `Discord answered ${error.status} (code ${String(error.code)}): ${error.message}`;
  if (error instanceof HTTPError) return `Discord answered ${error.status}`;
  if (error instanceof RateLimitError) return `rate limited for ${rateLimitWait(error)} ms, longer than a delivery may wait (${DELIVERY_BUDGET_MS} ms)`;
  if (host.aborted) return "the host stopped waiting for this attempt";
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return `no answer within ${DELIVERY_BUDGET_MS} ms`;
  return error instanceof Error ? error.message.replace(/\/webhooks\/[^\s]+/g, "/webhooks/<redacted>").replace(/Bot [^\s]+/g, "Bot <redacted>") : String(error);
}

/**
 * What the original response shows while a long reply's follow-ups go out: how many are sent (from 0, before the
 * first), and a digest of the reply's chunks, so an attempt in any process after a crash goes on from there.
 * Discord's webhooks take no idempotency key, and the original is the one message of the interaction a retry can
 * read back. Only a follow-up sent just before a crash, whose count was not yet recorded, can be sent again.
 */
interface ProgressJournal {
  write(sent: number): string;
  read(content: string): number;
  isCount(content: string): boolean;
}

function progressJournal(chunks: string[]): ProgressJournal {
  const digest = createHash("sha256").update(JSON.stringify(chunks)).digest("hex").slice(0, 8);
  // ASCII only, so Discord stores it as written.
  const pattern = /^-# Sending the reply in (\d+) parts\.\.\. \((\d+) sent below, ([0-9a-f]{8})\)$/;
  return {
    write: (sent) => `-# Sending the reply in ${chunks.length} parts... (${sent} sent below, ${digest})`,
    // Any count, this reply's or one made of other chunks (another messageLimit): not a final edit.
    isCount: (content) => pattern.test(content.trim()),
    read(content) {
      const match = pattern.exec(content.trim());
      if (!match || Number(match[1]) !== chunks.length || match[3] !== digest) return 0;
      // Written at 0 before the first follow-up and after each but the last; anything else is not this channel's.
      const sent = Number(match[2]);
      return sent < chunks.length - 1 ? sent : 0;
    },
  };
}
