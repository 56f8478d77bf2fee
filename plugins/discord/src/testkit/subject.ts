import type { ChannelRequest } from "@assemblyline-agents/core";
import type { ChannelKitEvent, ChannelKitSubject } from "@assemblyline-agents/core/testkit";
import { defineDiscordChannel, discordChannelModule } from "../gateway.js";
import { DISCORD_MESSAGE_LIMIT } from "../options.js";
import { FakeDiscordApi } from "./discord-api-server.js";
import { slashCommandInteraction } from "./interactions.js";
import { discordTestKeys, signDiscordBody } from "./keys.js";

/**
 * A conformance subject for the Discord channel: a fresh key pair, a local
 * server speaking Discord's webhook API and CDN, and the channel pointed at
 * both. Usage: `describeChannelConformance("discord", discordChannelKitSubject)`.
 */
export async function discordChannelKitSubject(): Promise<{ state: ChannelKitSubject; cleanup(): Promise<void> }> {
  const api = await new FakeDiscordApi().start();
  const keys = discordTestKeys();
  const other = discordTestKeys();
  const channel = defineDiscordChannel({ env: { DISCORD_PUBLIC_KEY: keys.publicKeyHex }, apiBaseUrl: api.apiBaseUrl, attachmentHosts: ["127.0.0.1"] });
  // The same event id must carry the same interaction (token included) when redelivered.
  const interactions = new Map<string, ReturnType<typeof slashCommandInteraction>>();
  const interactionFor = (event: ChannelKitEvent) => {
    let interaction = interactions.get(event.id);
    if (!interaction) {
      const attachment = event.attachment
        ? { id: event.attachment.id, filename: event.attachment.filename, contentType: event.attachment.contentType, size: event.attachment.bytes.byteLength, url: api.addAttachment(event.attachment.id, event.attachment.filename, event.attachment.bytes, event.attachment.contentType) }
        : undefined;
      interaction = slashCommandInteraction({ channelId: channelSnowflake(event.conversationKey), text: event.text, ...(attachment ? { attachment } : {}) });
      api.registerInteraction(interaction.token);
      interactions.set(event.id, interaction);
    }
    return interaction;
  };
  const request = (body: string, headers: Record<string, string>): ChannelRequest => ({
    method: "POST",
    path: channel.route,
    headers,
    body: JSON.parse(body) as never,
    rawBody: new TextEncoder().encode(body),
  });
  const state: ChannelKitSubject = {
    module: discordChannelModule(channel),
    messageLimit: DISCORD_MESSAGE_LIMIT,
    request(event) {
      const body = JSON.stringify(interactionFor(event));
      return request(body, signDiscordBody(body, keys.privateKey));
    },
    forgeries(event) {
      const body = JSON.stringify(interactionFor(event));
      const genuine = signDiscordBody(body, keys.privateKey);
      const tampered = body.replace(event.text, `${event.text} (tampered)`);
      const { "x-signature-ed25519": _signature, ...unsigned } = genuine;
      return [
        { name: "a body changed after signing", request: request(tampered, genuine) },
        { name: "a signature by another key", request: request(body, signDiscordBody(body, other.privateKey)) },
        { name: "a signature ten minutes old", request: request(body, signDiscordBody(body, keys.privateKey, Math.floor(Date.now() / 1000) - 600)) },
        { name: "no signature headers", request: request(body, { "content-type": "application/json" }) },
        { name: "no X-Signature-Ed25519", request: request(body, unsigned) },
      ];
    },
    handshake() {
      const body = JSON.stringify({ id: "ping", application_id: "1000000000000000001", type: 1, token: "ping", version: 1 });
      return request(body, signDiscordBody(body, keys.privateKey));
    },
    received(eventId) {
      const token = [...interactions.values()].find((interaction) => interaction.id === eventId)?.token;
      // In channel order (the original response above its follow-ups), as sent: Discord trims what it stores, so the
      // whitespace a reply was cut at is only in what the channel sent.
      const sent = api.received.filter((message) => message.interactionToken === token);
      const original = sent.filter((message) => message.kind === "edit-original").at(-1);
      return [...(original ? [original] : []), ...sent.filter((message) => message.kind === "followup")].map((message) => message.content);
    },
    failNextDelivery: () => api.failNext(1),
  };
  return { state, cleanup: () => api.stop() };
}

/** A stable snowflake-like channel id per conversation key. */
function channelSnowflake(key: string): string {
  let hash = 0n;
  for (const char of key) hash = (hash * 131n + BigInt(char.codePointAt(0)!)) % 10n ** 17n;
  return String(10n ** 17n + hash);
}
