import type { HarnessKitReply, HarnessKitSubject } from "@assemblyline-agents/core/testkit";
import { piAgentHarness } from "../harness.js";
import { startOpenAIChatServer, type ScriptedReply } from "./servers/index.js";

export * from "./servers/index.js";

/** The harness kit's protocol-neutral reply as a fake provider's script: text in two deltas, tool arguments in two chunks. */
export function scriptedReplyOf(reply: HarnessKitReply): ScriptedReply {
  if ("text" in reply) {
    const cut = Math.ceil(reply.text.length / 2);
    return { kind: "stream", text: [reply.text.slice(0, cut), reply.text.slice(cut)] };
  }
  if ("toolCall" in reply) {
    const args = JSON.stringify(reply.toolCall.input);
    return { kind: "stream", toolCalls: [{ id: reply.toolCall.id, name: reply.toolCall.name, argumentChunks: [args.slice(0, 3), args.slice(3)] }] };
  }
  return { kind: "stream", text: ["never finished"], holdAfter: { events: 0, until: new Promise<void>(() => undefined) } };
}

const KIT_KEY = "sk-harness-kit";
const KIT_MODEL = "openai/gpt-4o-mini";

/**
 * The harness kit's subject: the Pi engine against a local server speaking
 * OpenAI's chat-completions protocol, one per test, with its key passed in
 * (no environment variable read). `plugins verify` imports it through the
 * manifest's harnesses entry.
 */
export async function piHarnessKitSubject(): Promise<{ state: HarnessKitSubject; cleanup(): Promise<void> }> {
  const server = await startOpenAIChatServer({ apiKey: KIT_KEY });
  return {
    state: {
      harness: piAgentHarness({ models: { [KIT_MODEL]: { api: "openai-completions", baseUrl: server.baseUrl } }, apiKeys: { openai: KIT_KEY }, retry: { initialDelayMs: 5, maxDelayMs: 50 } }),
      modelSpec: KIT_MODEL,
      reply: (...replies) => void server.enqueue(...replies.map(scriptedReplyOf)),
      requests: () => server.requests.map((request) => JSON.stringify(request.body)),
    },
    cleanup: () => server.close(),
  };
}
