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
    const requiredSecretEnv: unknown = module.config.ingress?.requiredSecretEnv ?? [];
    // Checked as the build checks an authored channel's: an empty group would be met with nothing set (production
    // booting open), and a flat list of names would fail the check below with a TypeError naming nothing.
    if (!isSecretEnvGroups(requiredSecretEnv)) {
      throw new AssemblyLineError(
        "AL_ERR_CHANNEL_DEFINITION",
        `channel ${name} (route ${module.config.route}, registered through hooks.channel) has ingress.requiredSecretEnv ${shown(requiredSecretEnv)}, which is not any-of groups of env variable names`,
        { fix: 'Fix the plugin that registers it: ingress: { requiredSecretEnv: [["HOOK_SECRET"]] } is a list of groups, each a non-empty list of names such as HOOK_SECRET (upper case, digits, _), one group of which must be set.' },
      );
    }
    return { name, source: "registered through hooks.channel", requiredSecretEnv };
  });
}

/** Any-of groups of env variable names, as the build requires of an authored channel's `ingress.requiredSecretEnv`. */
function isSecretEnvGroups(value: unknown): value is string[][] {
  return (
    Array.isArray(value) &&
    value.every((group) => Array.isArray(group) && group.length > 0 && group.every((name) => typeof name === "string" && ENV_NAME.test(name)))
  );
}

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

function shown(value: unknown): string {
  return (JSON.stringify(value) ?? String(value)).slice(0, 120);
}

/**
 * Check each channel's `ingress.requiredSecretEnv` (any-of groups): a group is
 * satisfied when every variable in it is set and non-empty in `channelEnv`, the
 * environment channel modules read (process.env: the host has no way to hand them
 * its `env` option). Production refuses to boot while a channel has no satisfied
 * group; dev mode warns. `hostEnv`, the host's `env` option when given, only
 * explains a secret set there and not where the channel reads it.
 */
export function checkChannelSecrets(
  needs: ChannelSecretNeed[],
  channelEnv: Record<string, string | undefined>,
  devMode: boolean,
  logger: RuntimeLogger,
  hostEnv?: Record<string, string | undefined>,
): void {
  const met = (env: Record<string, string | undefined>, groups: string[][]) => groups.some((group) => group.every((name) => (env[name] ?? "").trim() !== ""));
  const unmet = needs.filter((channel) => channel.requiredSecretEnv.length > 0 && !met(channelEnv, channel.requiredSecretEnv));
  if (unmet.length === 0) return;
  const describe = unmet.map((channel) => {
    const onlyInOption = hostEnv !== undefined && hostEnv !== channelEnv && met(hostEnv, channel.requiredSecretEnv);
    const where = onlyInOption ? " in the process environment (it is set in the host's env option, which channel modules do not read)" : "";
    return `${channel.name} (${channel.source}) needs one of: ${channel.requiredSecretEnv.map((group) => group.join(" + ")).join(" | ")}${where}`;
  });
  if (devMode) {
    for (const line of describe) logger.warn({ event: "security.channel_secret_missing", detail: line }, "channel ingress secrets are not set; production boot would refuse");
    return;
  }
  throw new AssemblyLineError("AL_ERR_CHANNEL_SECRET_ENV", `production ingress is missing channel secrets: ${describe.join("; ")}`, {
    fix: "Set every variable of at least one group for each channel listed in the process environment, where channel modules read them (dev mode only warns).",
  });
}
