import { join } from "node:path";
import type { ConnectionProvider } from "@assemblyline-agents/core";
import { EncryptedGrantStore, createConnections } from "@assemblyline-agents/connections";
import { ARTIFACT_DIR, type RuntimeBundle } from "@assemblyline-agents/runtime";

/**
 * The connections provider a host gives an agent that has connections/ or
 * dynamic connections: grants from `<agentDir>/.assembly-line/grants.json`,
 * encrypted with ASSEMBLY_LINE_SECRET_KEY (no grant store without the key, so
 * connections with `auth` answer AL_ERR_GRANT_MISSING until it is set).
 */
export function hostConnections(bundle: RuntimeBundle, agentDir: string, env: Record<string, string | undefined> = process.env): ConnectionProvider | undefined {
  const { manifest } = bundle;
  if ((manifest.connections?.length ?? 0) === 0 && !manifest.agent.dynamicConnections?.dynamic) return undefined;
  const grants = env.ASSEMBLY_LINE_SECRET_KEY ? new EncryptedGrantStore({ path: join(agentDir, ARTIFACT_DIR, "grants.json"), env }) : undefined;
  return createConnections(grants ? { grants } : {});
}
