/** Test support for the Discord channel: keys, signing, a local Discord API, and the channel kit subject. */
export { discordTestKeys, signDiscordBody, type DiscordTestKeys } from "./keys.js";
export { FakeDiscordApi, type ChannelMessage, type FakeDiscordApiOptions, type ReceivedDiscordMessage } from "./discord-api-server.js";
export { slashCommandInteraction, snowflake } from "./interactions.js";
export { discordChannelKitSubject } from "./subject.js";
