import { AssemblyLineError, type RuntimeLogger } from "@assemblyline-agents/core";
import type { AgentManifest } from "@assemblyline-agents/runtime";

/**
 * Check each channel's `ingress.requiredSecretEnv` (any-of groups): a group is
 * satisfied when every variable in it is set and non-empty. Production refuses
 * to boot while a channel has no satisfied group; dev mode warns.
 */
export function checkChannelSecrets(manifest: AgentManifest, env: Record<string, string | undefined>, devMode: boolean, logger: RuntimeLogger): void {
  const unmet = manifest.channels.filter(
    (channel) => channel.requiredSecretEnv.length > 0 && !channel.requiredSecretEnv.some((group) => group.every((name) => (env[name] ?? "").trim() !== "")),
  );
  if (unmet.length === 0) return;
  const describe = unmet.map((channel) => `${channel.name} (${channel.source.file}) needs one of: ${channel.requiredSecretEnv.map((group) => group.join(" + ")).join(" | ")}`);
  if (devMode) {
    for (const line of describe) logger.warn({ event: "security.channel_secret_missing", detail: line }, "channel ingress secrets are not set; production boot would refuse");
    return;
  }
  throw new AssemblyLineError("AL_ERR_CHANNEL_SECRET_ENV", `production ingress is missing channel secrets: ${describe.join("; ")}`, {
    fix: "Set every variable of at least one group for each channel listed (dev mode only warns).",
  });
}
