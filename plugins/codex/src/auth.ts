import { AssemblyLineError } from "@assemblyline-agents/core";
import type { CodexAppServer } from "./app-server.js";

/**
 * The route uses the Codex CLI's own login session (ChatGPT sign-in or a key
 * saved with `codex login --with-api-key`), found in CODEX_HOME. Without one
 * the run fails here, before any model call, with the command that fixes it.
 */
export async function checkLoginSession(server: CodexAppServer, env: Record<string, string | undefined>): Promise<void> {
  const status = await server.request<{ account: { type: string } | null; requiresOpenaiAuth: boolean }>("account/read", { refreshToken: false });
  if (status.account === null && status.requiresOpenaiAuth) {
    throw new AssemblyLineError("AL_ERR_CODEX_LOGIN", `the Codex CLI has no login session in ${env.CODEX_HOME ?? "~/.codex"}`, {
      fix: "Run `npx codex login` (or `npx codex login --with-api-key`) as the user the host runs as, with the same CODEX_HOME.",
    });
  }
}
