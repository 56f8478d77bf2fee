import { REST, DiscordAPIError, HTTPError, RateLimitError } from "@discordjs/rest";
import { AssemblyLineError, type ChannelDelivery } from "@assemblyline-agents/core";
import { deliveryMetadata } from "./interaction.js";
import { apiBaseUrl, type ResolvedDiscordOptions } from "./options.js";
import { splitMessage } from "./split-message.js";

/** What an empty reply is shown as: Discord refuses a message without content. */
export const EMPTY_REPLY = "(no reply)";

/**
 * Delivers replies through the interaction's follow-up webhook: the first chunk
 * replaces the deferred "thinking..." response (PATCH .../messages/@original,
 * idempotent, so a retried delivery edits the same message), every further
 * chunk is a follow-up message. @discordjs/rest honours Discord's rate-limit
 * headers (X-RateLimit-* per bucket, the global limit, 429 retry_after) and one
 * client per API base is shared by every delivery, so buckets are tracked
 * across runs. Mentions are never parsed: a reply cannot ping @everyone.
 */
export class DiscordDelivery {
  private readonly clients = new Map<string, REST>();

  constructor(private readonly options: ResolvedDiscordOptions) {}

  async deliver(delivery: ChannelDelivery): Promise<void> {
    const target = deliveryMetadata(delivery.metadata);
    if (!target) {
      throw new AssemblyLineError("AL_ERR_DISCORD_DELIVERY", `run ${delivery.runId} has no Discord interaction to reply to (its channel metadata lacks discord.interactionToken)`, {
        fix: "Only runs started by a Discord interaction can be delivered through this channel.",
      });
    }
    const chunks = splitMessage(delivery.text.trim() === "" ? EMPTY_REPLY : delivery.text, this.options.messageLimit);
    const rest = this.client();
    const webhook = `/webhooks/${encodeURIComponent(target.applicationId)}/${encodeURIComponent(target.interactionToken)}` as const;
    try {
      await rest.patch(`${webhook}/messages/@original`, { body: message(chunks[0]!), auth: false });
      for (const chunk of chunks.slice(1)) await rest.post(webhook, { body: message(chunk), auth: false });
    } catch (error) {
      throw new AssemblyLineError("AL_ERR_DISCORD_DELIVERY", `delivering run ${delivery.runId}'s reply to Discord failed: ${describeFailure(error)}`, {
        fix: "The outbox retries with backoff; an interaction token expires 15 minutes after the interaction.",
        cause: error,
      });
    }
  }

  private client(): REST {
    const base = apiBaseUrl(this.options);
    let rest = this.clients.get(base);
    if (!rest) {
      // No retries of its own for failures: the outbox retries with backoff. 429s are still waited out.
      rest = new REST({ version: "10", api: base, retries: 0, timeout: 15_000 });
      this.clients.set(base, rest);
    }
    return rest;
  }
}

function message(content: string) {
  return { content, allowed_mentions: { parse: [] } };
}

/** A failure without the interaction token (it is in the request URL). */
function describeFailure(error: unknown): string {
  if (error instanceof DiscordAPIError) return `Discord answered ${error.status} (code ${String(error.code)}): ${error.message}`;
  if (error instanceof HTTPError) return `Discord answered ${error.status}`;
  if (error instanceof RateLimitError) return `rate limited for ${error.timeToReset} ms`;
  return error instanceof Error ? error.message.replace(/\/webhooks\/[^\s]+/g, "/webhooks/<redacted>") : String(error);
}
