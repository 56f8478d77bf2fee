import { AssemblyLineError, defineChannel, type ChannelAttachment, type ChannelDefinition, type ChannelDelivery, type ChannelFailureDelivery, type ChannelModule, type ChannelRequest } from "@assemblyline-agents/core";
import type { KeyObject } from "node:crypto";
import { resolveDiscordAttachment } from "./attachments.js";
import { DiscordDelivery, FAILURE_REPLY } from "./delivery.js";
import { normalizeInteraction } from "./interaction.js";
import { ATTACHMENT_HOST, DISCORD_MESSAGE_LIMIT, resolveDiscordOptions, type DiscordChannelOptions } from "./options.js";
import { parsePublicKey, verifyDiscordRequest } from "./signature.js";

export type DiscordChannel = ChannelDefinition & Required<Pick<ChannelModule, "normalizeHttp" | "deliver" | "deliverFailure" | "resolveAttachment">>;

/**
 * `export default defineDiscordChannel()` in `channels/discord.ts`: Discord's
 * interactions endpoint. Every request's Ed25519 signature is checked against
 * the application's public key (env DISCORD_PUBLIC_KEY) before anything else;
 * PING is answered; commands, components and modal submissions become turns,
 * answered at once with a deferred response; the reply is delivered later by
 * the outbox through the follow-up webhook, split at Discord's length limit, or,
 * once the interaction's token expired (15 minutes), as the bot's channel
 * messages when a bot token is set (env DISCORD_BOT_TOKEN, optional).
 */
export function defineDiscordChannel(options: DiscordChannelOptions = {}): DiscordChannel {
  checkOptions(options);
  const resolved = resolveDiscordOptions(options);
  const delivery = new DiscordDelivery(resolved);
  // The key is parsed once per value, and again if the env variable changes (rotation).
  let cached: { hex: string; key: KeyObject } | undefined;
  const publicKey = (): KeyObject => {
    const hex = resolved.env[resolved.publicKeyEnv] ?? "";
    // Nothing can be verified without the key, so nothing passes (fail closed). A key that is missing or
    // malformed is the host's misconfiguration, not the caller's doing: the AL_ERR_DISCORD_CONFIG error
    // declares no refusal status, so the host logs it and answers a 500 that does not show it.
    if (cached?.hex !== hex) cached = { hex, key: parsePublicKey(hex, resolved.publicKeyEnv) };
    return cached.key;
  };
  const definition = defineChannel({
    transport: "http",
    route: resolved.route,
    methods: ["POST"],
    ingress: { requiredSecretEnv: [[resolved.publicKeyEnv]] },
  });
  return Object.freeze({
    ...definition,
    normalizeHttp(request: ChannelRequest) {
      verifyDiscordRequest(request.headers, request.rawBody, publicKey(), { maxSkewSeconds: resolved.maxTimestampSkewSeconds });
      return normalizeInteraction(request.body);
    },
    deliver: (reply: ChannelDelivery) => delivery.deliver(reply),
    // The user sees this instead of "thinking..." for good; never the error, which may name internals.
    deliverFailure: (failure: ChannelFailureDelivery) => delivery.deliver({ ...failure, text: FAILURE_REPLY }),
    resolveAttachment: (attachment: ChannelAttachment) => resolveDiscordAttachment(attachment, resolved),
  }) as DiscordChannel;
}

/** The ChannelModule a host runs for a Discord channel definition (what the compiler's bundle builds from a channels/ file). */
export function discordChannelModule(channel: DiscordChannel): ChannelModule {
  return {
    config: { transport: "http", route: channel.route, methods: channel.methods ?? ["POST"], ...(channel.ingress ? { ingress: channel.ingress } : {}) },
    normalizeHttp: channel.normalizeHttp,
    deliver: channel.deliver,
    deliverFailure: channel.deliverFailure,
    resolveAttachment: channel.resolveAttachment,
  };
}

function checkOptions(options: DiscordChannelOptions): void {
  const fail = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_DISCORD_CONFIG", `defineDiscordChannel: ${problem}`, { fix });
  };
  if (typeof options !== "object" || options === null) fail("options must be an object", "Call defineDiscordChannel() or defineDiscordChannel({ route: \"/discord\" }).");
  const known = new Set(["route", "publicKeyEnv", "botTokenEnv", "apiBaseUrl", "attachmentHosts", "maxTimestampSkewSeconds", "messageLimit", "env"]);
  const unknown = Object.keys(options).find((key) => !known.has(key));
  if (unknown) fail(`unknown option ${JSON.stringify(unknown)}`, `Use only ${[...known].join(", ")}.`);
  if (options.route !== undefined && (typeof options.route !== "string" || !options.route.startsWith("/"))) fail(`route ${JSON.stringify(options.route)} must start with /`, 'Use a path such as "/discord/interactions".');
  if (options.publicKeyEnv !== undefined && !/^[A-Z_][A-Z0-9_]*$/.test(options.publicKeyEnv)) fail(`publicKeyEnv ${JSON.stringify(options.publicKeyEnv)} is not an env variable name`, "Use e.g. DISCORD_PUBLIC_KEY.");
  if (options.botTokenEnv !== undefined && !/^[A-Z_][A-Z0-9_]*$/.test(options.botTokenEnv)) fail(`botTokenEnv ${JSON.stringify(options.botTokenEnv)} is not an env variable name`, "Use e.g. DISCORD_BOT_TOKEN.");
  if (options.apiBaseUrl !== undefined && !/^https?:\/\//.test(options.apiBaseUrl)) fail(`apiBaseUrl ${JSON.stringify(options.apiBaseUrl)} is not an http(s) URL`, "Leave it unset for https://discord.com/api.");
  if (options.attachmentHosts !== undefined && (!Array.isArray(options.attachmentHosts) || options.attachmentHosts.some((host) => typeof host !== "string" || host === ""))) fail("attachmentHosts must be a list of host names", 'Use e.g. ["cdn.discordapp.com"].');
  const notAHost = options.attachmentHosts?.find((host) => !ATTACHMENT_HOST.test(host));
  if (notAHost !== undefined) {
    fail(
      `attachmentHosts holds ${JSON.stringify(notAHost)}, not a host name (no "*." pattern, scheme, port or path): an attachment's URL is checked against the list by exact name`,
      'List each host by its exact name, e.g. ["cdn.discordapp.com", "media.discordapp.net"].',
    );
  }
  if (options.maxTimestampSkewSeconds !== undefined && !(Number.isFinite(options.maxTimestampSkewSeconds) && options.maxTimestampSkewSeconds > 0)) fail("maxTimestampSkewSeconds must be a positive number", "Leave it unset for 300.");
  if (options.messageLimit !== undefined && !(Number.isInteger(options.messageLimit) && options.messageLimit >= 2 && options.messageLimit <= DISCORD_MESSAGE_LIMIT)) fail(`messageLimit must be an integer from 2 to ${DISCORD_MESSAGE_LIMIT}`, "Leave it unset for Discord's limit.");
}
