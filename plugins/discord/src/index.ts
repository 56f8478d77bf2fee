export { defineDiscordChannel, discordChannelModule, type DiscordChannel } from "./gateway.js";
export {
  API_BASE_URL_ENV,
  DEFAULT_API_BASE_URL,
  DEFAULT_ATTACHMENT_HOSTS,
  DEFAULT_BOT_TOKEN_ENV,
  DEFAULT_MAX_SKEW_SECONDS,
  DEFAULT_PUBLIC_KEY_ENV,
  DEFAULT_ROUTE,
  DISCORD_MESSAGE_LIMIT,
  type DiscordChannelOptions,
} from "./options.js";
export { CallbackType, InteractionType, normalizeInteraction, type DiscordDeliveryMetadata, type DiscordInteraction } from "./interaction.js";
export { verifyDiscordRequest, parsePublicKey } from "./signature.js";
export { splitMessage } from "./split-message.js";
export { DELIVERY_BUDGET_MS, EMPTY_REPLY, FAILURE_REPLY } from "./delivery.js";
export { DISCORD_PLUGIN_ID, discordPlugin } from "./plugin.js";
