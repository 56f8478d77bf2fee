import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { AgentHarness } from "@assemblyline-agents/core";
import { buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, startHost, tempDir, waitFor } from "./support/host.js";

const SECRET = "reply-token-5f0c2b";

// A provider channel whose reply needs a secret from the inbound request, as Discord's interaction token.
const AGENT = {
  "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", instructions: "Test." });\n`,
  "channels/chat.ts": `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/chat", methods: ["POST"] });
export function normalizeHttp(request) {
  const body = request.body;
  return { eventId: body.id, conversationId: body.conversation, message: body.text, metadata: { room: body.conversation }, deliveryMetadata: { replyToken: body.replyToken } };
}
export async function deliver(delivery) {
  (globalThis.__deliveredMetadata ??= []).push({ metadata: delivery.metadata, deliveryMetadata: delivery.deliveryMetadata });
}
`,
};

let bundle: RuntimeBundle;
beforeAll(async () => {
  const agentDir = join(tempDir("al-delivery-only-agent-"), "agent");
  for (const [file, text] of Object.entries(AGENT)) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  bundle = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
});

describe("a channel turn's deliveryMetadata", () => {
  it("reaches deliver() but neither the model context nor the run's input or channel metadata", async () => {
    const delivered = ((globalThis as { __deliveredMetadata?: unknown[] }).__deliveredMetadata ??= []);
    delivered.length = 0;
    const contexts: string[] = [];
    const capture: AgentHarness = {
      name: "capture",
      async runTurn(input) {
        contexts.push(JSON.stringify(input.context));
        return { status: "completed", response: { text: "done" } };
      },
    };
    const host = await startHost(bundle, { agentHarness: capture, outbox: { pollIntervalMs: 50, baseDelayMs: 50 } });
    const reply = await call(`${host.url}/chat`, { body: { id: "evt-1", conversation: "room-1", text: "hello", replyToken: SECRET } });
    expect(reply.status).toBe(202);
    await waitFor(() => delivered.length > 0 || undefined, 10_000, "the delivery");

    expect(delivered).toEqual([{ metadata: expect.objectContaining({ room: "room-1" }), deliveryMetadata: { replyToken: SECRET } }]);
    expect(contexts).toHaveLength(1);
    expect(contexts[0]).toContain("room-1");
    expect(contexts[0]).not.toContain(SECRET);
    const run = (await host.runtime.state.runs.getRun(reply.body.runId as string))!;
    expect(run.input.metadata).toEqual({ room: "room-1" });
    expect(JSON.stringify(run.input.metadata)).not.toContain(SECRET);
    expect(JSON.stringify(run.input.channel?.metadata)).not.toContain(SECRET);
    expect(run.input.channel?.delivery).toEqual({ replyToken: SECRET });
  });
});
