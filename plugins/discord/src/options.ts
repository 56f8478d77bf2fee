/** Discord's cap on a message's `content`, in characters. */
export const DISCORD_MESSAGE_LIMIT = 2000;
export const DEFAULT_ROUTE = "/discord/interactions";
export const DEFAULT_PUBLIC_KEY_ENV = "DISCORD_PUBLIC_KEY";
export const DEFAULT_API_BASE_URL = "https://discord.com/api";
export const API_BASE_URL_ENV = "DISCORD_API_BASE_URL";
export const DEFAULT_BOT_TOKEN_ENV = "DISCORD_BOT_TOKEN";
/** Discord's attachment CDN hosts. */
export const DEFAULT_ATTACHMENT_HOSTS = ["cdn.discordapp.com", "media.discordapp.net"];
/** How far X-Signature-Timestamp may be from now before a request counts as replayed. */
export const DEFAULT_MAX_SKEW_SECONDS = 300;

export interface DiscordChannelOptions {
  /** Route of the interactions endpoint URL. Default "/discord/interactions". */
  route?: string;
  /** Env variable holding the application's public key (hex). Default DISCORD_PUBLIC_KEY. */
  publicKeyEnv?: string;
  /**
   * Env variable holding the bot token, read on every delivery. Optional: with it, a reply the interaction's
   * token (15 minutes) can no longer carry goes out as channel messages from the bot. Default DISCORD_BOT_TOKEN.
   */
  botTokenEnv?: string;
  /** Discord's API base; env DISCORD_API_BASE_URL, else https://discord.com/api. */
  apiBaseUrl?: string;
  /**
   * Hosts attachment downloads may come from, and reach through redirects (any other is refused), each by its exact
   * name: a "*.example.com" pattern, a scheme, port or path is refused (AL_ERR_DISCORD_CONFIG). Default Discord's CDN hosts.
   */
  attachmentHosts?: string[];
  /** Largest |now - X-Signature-Timestamp| accepted, in seconds. Default 300. */
  maxTimestampSkewSeconds?: number;
  /** Longest reply chunk; longer replies are split. Default (and at most) 2000. */
  messageLimit?: number;
  /** Where env variables are read; default process.env, read on every request. */
  env?: Record<string, string | undefined>;
}

export interface ResolvedDiscordOptions {
  route: string;
  publicKeyEnv: string;
  botTokenEnv: string;
  apiBaseUrl: string;
  attachmentHosts: string[];
  maxTimestampSkewSeconds: number;
  messageLimit: number;
  env: Record<string, string | undefined>;
}

/**
 * A host name as `attachmentHosts` takes it: a DNS name or IPv4 address, or an IPv6 one in brackets, as a URL's
 * hostname has it. Not a "*." pattern: the first hop is checked against the list by exact name, and the same list
 * goes to the host as the download's allowedHosts, so a pattern would widen the redirects alone.
 */
export const ATTACHMENT_HOST = /^(?:[a-z0-9_-]+\.)*[a-z0-9_-]+$|^\[[0-9a-f:.]+\]$/i;

export function resolveDiscordOptions(options: DiscordChannelOptions): ResolvedDiscordOptions {
  const env = options.env ?? process.env;
  return {
    route: options.route ?? DEFAULT_ROUTE,
    publicKeyEnv: options.publicKeyEnv ?? DEFAULT_PUBLIC_KEY_ENV,
    botTokenEnv: options.botTokenEnv ?? DEFAULT_BOT_TOKEN_ENV,
    // Empty: decided per call, so DISCORD_API_BASE_URL set after boot still counts.
    apiBaseUrl: options.apiBaseUrl ?? "",
    attachmentHosts: (options.attachmentHosts ?? DEFAULT_ATTACHMENT_HOSTS).map((host) => host.toLowerCase()),
    maxTimestampSkewSeconds: options.maxTimestampSkewSeconds ?? DEFAULT_MAX_SKEW_SECONDS,
    messageLimit: options.messageLimit ?? DISCORD_MESSAGE_LIMIT,
    env,
  };
}

/** The API base for this call: the option, else the env variable, else Discord's. */
export function apiBaseUrl(options: ResolvedDiscordOptions): string {
  return (options.apiBaseUrl || options.env[API_BASE_URL_ENV] || DEFAULT_API_BASE_URL).replace(/\/+$/, "");
}

/** The bot token for this call, or undefined when none is set (replies then go only through the interaction's webhook). */
export function botToken(options: ResolvedDiscordOptions): string | undefined {
  const token = options.env[options.botTokenEnv]?.trim();
  return token ? token : undefined;
}
