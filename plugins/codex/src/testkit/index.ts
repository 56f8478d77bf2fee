import { rmSync } from "node:fs";
import { AssemblyLineError } from "@assemblyline-agents/core";
import type { HarnessKitReply, HarnessKitSubject } from "@assemblyline-agents/core/testkit";
import { codexAgentHarness } from "../harness.js";
import { codexHome, codexRuns } from "./codex-home.js";
import { ResponsesServer, type ScriptedResponse } from "./responses-server.js";

export { codexHome, codexRuns } from "./codex-home.js";
export { ResponsesServer, type ScriptedResponse } from "./responses-server.js";

/** The harness kit's protocol-neutral reply as the Responses server's script. */
export function scriptedResponseOf(reply: HarnessKitReply): ScriptedResponse {
  if ("text" in reply) return { text: reply.text };
  if ("toolCall" in reply) return { toolCalls: [{ callId: reply.toolCall.id, name: reply.toolCall.name, arguments: reply.toolCall.input }] };
  return { hang: true };
}

const KIT_KEY = "sk-codex-harness-kit";

/**
 * The harness kit's subject: the Codex engine on the real app-server, its
 * model provider pointed at a local Responses API server through a fresh
 * CODEX_HOME logged in with `codex login --with-api-key`. Without a codex
 * binary that runs, it fails naming how to get one.
 */
export async function codexHarnessKitSubject(): Promise<{ state: HarnessKitSubject; cleanup(): Promise<void> }> {
  const binary = codexRuns();
  if (!binary.ok) {
    throw new AssemblyLineError("AL_ERR_HARNESS", `the Codex engine's kit needs the codex binary: ${binary.why}`, {
      fix: "npm install @openai/codex (or set CODEX_BINARY to a codex that runs), then run the kit again.",
    });
  }
  const server = await new ResponsesServer(KIT_KEY).start();
  const home = codexHome(server.baseUrl, KIT_KEY);
  return {
    state: {
      harness: codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } }),
      modelSpec: "openai-codex/gpt-5.1-codex",
      reply: (...replies) => void server.reply(...replies.map(scriptedResponseOf)),
      requests: () => server.requests.map((request) => JSON.stringify(request.body)),
    },
    cleanup: async () => {
      await server.stop();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
