import { AssemblyLineError, type ChannelModule, type RuntimeLogger } from "@assemblyline-agents/core";
import type { AgentManifest } from "@assemblyline-agents/runtime";

/** One served channel's ingress secrets: `ingress.requiredSecretEnv` and where the channel comes from. */
export interface ChannelSecretNeed {
  name: string;
  /** `channels/x.ts`, or how a plugin registered it. */
  source: string;
  requiredSecretEnv: string[][];
}

/**
 * The secret needs of the channels the host serves: an authored channel's from the manifest (which names
 * its file), one a plugin registered through hooks.channel from its module's `config.ingress`.
 */
export function channelSecretNeeds(manifest: AgentManifest, channels: Record<string, ChannelModule>): ChannelSecretNeed[] {
  const authored = new Map(manifest.channels.map((channel) => [channel.name, channel] as const));
  return Object.entries(channels).map(([name, module]) => {
    const entry = authored.get(name);
    if (entry && entry.route === module.config.route) return { name, source: entry.source.file, requiredSecretEnv: entry.requiredSecretEnv };
    return { name, source: "registered through hooks.channel", requiredSecretEnv: module.config.ingress?.requiredSecretEnv ?? [] };
  });
}

/**
 * Check each channel's `ingress.requiredSecretEnv` (any-of groups): a group is
 * satisfied when every variable in it is set and non-empty. Production refuses
 * to boot while a channel has no satisfied group; dev mode warns.
 */
export function checkChannelSecrets(needs: ChannelSecretNeed[], env: Record<string, string | undefined>, devMode: boolean, logger: RuntimeLogger): void {
  const unmet = needs.filter((channel) => channel.requiredSecretEnv.length > 0 && !channel.requiredSecretEnv.some((group) => group.every((name) => (env[name] ?? "").trim() !== "")));
  if (unmet.length === 0) return;
  const describe = unmet.map((channel) => `${channel.name} (${channel.source}) needs one of: ${channel.requiredSecretEnv.map((group) => group.join(" + ")).join(" | ")}`);
  if (devMode) {
    for (const line of describe) logger.warn({ event: "security.channel_secret_missing", detail: line }, "channel ingress secrets are not set; production boot would refuse");
    return;
  }
  throw new AssemblyLineError("AL_ERR_CHANNEL_SECRET_ENV", `production ingress is missing channel secrets: ${describe.join("; ")}`, {
    fix: "Set every variable of at least one group for each channel listed (dev mode only warns).",
  });
}
