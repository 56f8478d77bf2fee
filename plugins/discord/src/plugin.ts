import { readFileSync } from "node:fs";
import { definePlugin, type PluginDefinition } from "@assemblyline-agents/core";
import { defineDiscordChannel, discordChannelModule } from "./gateway.js";
import type { DiscordChannelOptions } from "./options.js";

export const DISCORD_PLUGIN_ID = "discord";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/**
 * For hosts that compose channels in code instead of a `channels/discord.ts`
 * file: registers the Discord channel at its route through hooks.channel.
 */
export function discordPlugin(options: DiscordChannelOptions = {}): PluginDefinition {
  const channel = defineDiscordChannel(options);
  return definePlugin({
    name: DISCORD_PLUGIN_ID,
    version: PACKAGE_VERSION,
    apply(kernel) {
      kernel.hooks.channel.tap({ name: DISCORD_PLUGIN_ID }, (channels) => channels.set(channel.route, discordChannelModule(channel)));
    },
  });
}
