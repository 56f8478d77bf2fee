import type { AgentHarness } from "@assemblyline-agents/core";
import { CODEX_PROVIDER, codexAgentHarness } from "@assemblyline-agents/codex";

/**
 * The host's built-in model routes: `openai-codex/*` runs on the Codex
 * app-server with the CLI's login session (subagents inheriting such a model
 * included). Routes the embedder passes win over these.
 */
export function withBuiltInModelRoutes(routes: Record<string, AgentHarness> | undefined, env: Record<string, string | undefined>): Record<string, AgentHarness> {
  return { [CODEX_PROVIDER]: codexAgentHarness({ env }), ...routes };
}

/** Model specs served by a built-in route rather than the Pi catalog (skipped by the build's model check). */
export function servedByBuiltInRoute(modelSpec: string): boolean {
  return modelSpec.startsWith(`${CODEX_PROVIDER}/`);
}
