import { createHash } from "node:crypto";
import { REST, DiscordAPIError, HTTPError, RateLimitError, type RateLimitData } from "@discordjs/rest";
import { AssemblyLineError, finalDeliveryFailure, retryDeliveryAfter, type ChannelDelivery } from "@assemblyline-agents/core";
import { deliveryMetadata } from "./interaction.js";
import { attemptSignal, untilAborted } from "./attempt-signal.js";
import { apiBaseUrl, type ResolvedDiscordOptions } from "./options.js";
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

/**
 * Discord's answers no retry can mend: the interaction's token expired (15
 * minutes) or is unknown, the webhook or message is gone. The outbox then fails
 * the delivery at once instead of trying 8 times over an hour.
 */
const FINAL_ERROR_CODES = new Set([10008 /* Unknown Message */, 10015 /* Unknown Webhook */, 50027 /* Invalid Webhook Token */]);

/** Discord's flag on a deferred response not yet edited ("thinking..."). */
const MESSAGE_FLAG_LOADING = 1 << 7;

/** An interaction token lives 15 minutes; progress older than that can never be used. */
const TOKEN_LIFETIME_MS = 15 * 60_000;

/** Follow-up messages already sent for a reply, in this process. */
interface Progress {
  text: string;
  sent: number;
  at: number;
}

/**
 * Delivers replies through the interaction's follow-up webhook. A reply that
 * fits one message replaces the deferred "thinking..." response (PATCH
 * .../messages/@original, idempotent). A longer one is sent as follow-up
 * messages first and the original is edited last, so an original that already
 * shows the first chunk means the whole reply went out. In between, the
 * original shows how many follow-ups are out (progressJournal), so a delivery
 * retried after a crash, in any process, reads it (GET .../messages/@original)
 * and sends only what is missing. @discordjs/rest honours Discord's
 * rate-limit headers (X-RateLimit-* per bucket, the global limit, 429
 * Retry-After), one client per API base shared by every delivery; a wait past
 * the delivery's budget fails it at once instead, telling the outbox to retry
 * no sooner than the wait is over (retryDeliveryAfter): the outbox's stored
 * retry time holds in every process, so no replica hits Discord early, which
 * counts toward its invalid-request ban. Mentions are never parsed: a reply
 * cannot ping @everyone.
 */
export class DiscordDelivery {
  private readonly clients = new Map<string, REST>();
  private readonly progress = new Map<string, Progress>();
  /** Per interaction webhook path: when its delivery must be done, and the attempt under way. */
  private readonly deadlines = new Map<string, number>();
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
    const attempt = (previous ? previous.catch(() => undefined) : Promise.resolve()).then(() => this.send(delivery, webhook));
    this.inFlight.set(webhook, attempt);
    try {
      await attempt;
    } finally {
      if (this.inFlight.get(webhook) === attempt) this.inFlight.delete(webhook);
    }
  }

  private async send(delivery: ChannelDelivery, webhook: `/webhooks/${string}`): Promise<void> {
    const text = delivery.text.trim() === "" ? EMPTY_REPLY : delivery.text;
    // A run of whitespace longer than a message would be a chunk of its own, which Discord refuses as empty.
    const chunks = splitMessage(text, this.options.messageLimit).filter((chunk) => chunk.trim() !== "");
    const rest = this.client();
    // The host's abort (its deliver timeout) or this channel's own budget, whichever comes first.
    const attempt = attemptSignal(delivery.signal, DELIVERY_BUDGET_MS);
    const signal = attempt.signal;
    // Settle when the attempt is over even while the client still sleeps out a wait, so the next one is not stuck behind it.
    const call = <T>(request: Promise<T>): Promise<T> => untilAborted(request, signal);
    this.deadlines.set(webhook, Date.now() + DELIVERY_BUDGET_MS);
    this.forgetExpired();
    const original = `${webhook}/messages/@original` as const;
    try {
      if (chunks.length > 1) {
        const journal = progressJournal(chunks);
        // What an attempt elsewhere (before a crash) left in the original: the whole reply (its last step), or
        // how many follow-ups it had sent. This process may know of one more: a follow-up whose journal edit failed.
        const current = (await call(rest.get(original, { auth: false, signal }))) as { content?: unknown; flags?: unknown };
        const shown = typeof current.content === "string" ? current.content : "";
        // Only this channel edits the original: anything there but "thinking..." (empty, LOADING) or a count is the
        // final edit. Not compared with the first chunk: Discord trims what it stores and strips characters it deems invalid.
        const loading = (Number(current.flags ?? 0) & MESSAGE_FLAG_LOADING) !== 0;
        if (!loading && shown.trim() !== "" && !journal.isCount(shown)) return;
        const remembered = this.progress.get(webhook);
        const progress: Progress = { text, sent: Math.max(journal.read(shown), remembered?.text === text ? remembered.sent : 0), at: remembered?.at ?? Date.now() };
        this.progress.set(webhook, progress);
        for (let index = progress.sent + 1; index < chunks.length; index += 1) {
          await call(rest.post(webhook, { body: message(chunks[index]!), auth: false, signal }));
          progress.sent = index;
          // Recorded where any process can read it, before the next one goes out; after the last, the original's final edit says it all.
          if (index < chunks.length - 1) await call(rest.patch(original, { body: message(journal.write(index)), auth: false, signal }));
        }
      }
      await call(rest.patch(original, { body: message(chunks[0]!), auth: false, signal }));
      this.progress.delete(webhook);
    } catch (error) {
      // No `cause`: Discord's errors carry the request URL, and with it the interaction token.
      const failure = new AssemblyLineError("AL_ERR_DISCORD_DELIVERY", `delivering run ${delivery.runId}'s reply to Discord failed: ${describeFailure(error, delivery.signal)}`, {
        fix: "The outbox retries with backoff, or once the wait Discord asked for is over; an interaction token expires 15 minutes after the interaction.",
      });
      if (error instanceof DiscordAPIError && FINAL_ERROR_CODES.has(Number(error.code))) throw finalDeliveryFailure(failure);
      // Discord said how long to wait (in the bucket's reset or in Retry-After alone): the next attempt waits it out.
      if (error instanceof RateLimitError) throw retryDeliveryAfter(failure, rateLimitWait(error));
      throw failure;
    } finally {
      attempt.clear();
      this.deadlines.delete(webhook);
    }
  }

  private forgetExpired(): void {
    const oldest = Date.now() - TOKEN_LIFETIME_MS;
    for (const [key, progress] of this.progress) if (progress.at < oldest) this.progress.delete(key);
  }

  private client(): REST {
    const base = apiBaseUrl(this.options);
    let rest = this.clients.get(base);
    if (!rest) {
      // No retries of its own for failures: the outbox retries with backoff. 429s are waited out, within the delivery's budget.
      rest = new REST({ version: "10", api: base, retries: 0, timeout: DELIVERY_BUDGET_MS, rejectOnRateLimit: (limit) => this.waitTooLong(limit) });
      this.clients.set(base, rest);
    }
    return rest;
  }

  /** A rate-limit wait that would end past the delivery's budget fails it now (RateLimitError). */
  private waitTooLong(limit: RateLimitData): boolean {
    const path = new URL(limit.url).pathname;
    for (const [webhook, deadline] of this.deadlines) {
      if (path.includes(webhook)) return Date.now() + rateLimitWait(limit) > deadline;
    }
    return false;
  }
}

/** How long Discord asked to wait, in ms: a 429 may name it only in Retry-After (a shared or Cloudflare limit), not in the bucket's reset. */
function rateLimitWait(limit: RateLimitData): number {
  return Math.max(limit.timeToReset, limit.retryAfter, limit.sublimitTimeout);
}

function message(content: string) {
  return { content, allowed_mentions: { parse: [] } };
}

/** A failure without the interaction token (it is in the request URL). */
function describeFailure(error: unknown, host: AbortSignal): string {
  if (error instanceof DiscordAPIError) return `Discord answered ${error.status} (code ${String(error.code)}): ${error.message}`;
  if (error instanceof HTTPError) return `Discord answered ${error.status}`;
  if (error instanceof RateLimitError) return `rate limited for ${rateLimitWait(error)} ms, longer than a delivery may wait (${DELIVERY_BUDGET_MS} ms)`;
  if (host.aborted) return "the host stopped waiting for this attempt";
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return `no answer within ${DELIVERY_BUDGET_MS} ms`;
  return error instanceof Error ? error.message.replace(/\/webhooks\/[^\s]+/g, "/webhooks/<redacted>") : String(error);
}

/**
 * What the original response shows while a long reply's follow-ups go out: how many are sent, and a digest of
 * the reply's chunks, so an attempt in any process after a crash goes on from there. Discord's webhooks take no
 * idempotency key, and the original is the one message of the interaction a retry can read back. Only a follow-up
 * sent just before a crash, whose count was not yet recorded, can be sent again.
 */
function progressJournal(chunks: string[]): { write(sent: number): string; read(content: string): number; isCount(content: string): boolean } {
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
      const sent = Number(match[2]);
      return sent >= 1 && sent < chunks.length - 1 ? sent : 0;
    },
  };
}
