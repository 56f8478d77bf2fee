import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { AssemblyLineError, type AgentHarness } from "@assemblyline-agents/core";
import { buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, startHost, tempDir, waitFor } from "./support/host.js";

// Two provider channels: one that can tell its user a run failed (deliverFailure), one that cannot.
const channel = (route: string, failures: boolean) => `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "${route}", methods: ["POST"] });
export function normalizeHttp(request) {
  const body = request.body;
  return { eventId: body.id, conversationId: body.conversation, message: body.text, deliveryMetadata: { replyToken: "token-" + body.id } };
}
export async function deliver(delivery) {
  (globalThis.__channelCalls ??= []).push({ route: "${route}", kind: "reply", runId: delivery.runId, text: delivery.text });
}
${failures ? `export async function deliverFailure(failure) {
  (globalThis.__channelCalls ??= []).push({ route: "${route}", kind: "failure", runId: failure.runId, code: failure.code, deliveryMetadata: failure.deliveryMetadata, text: failure.text });
}` : ""}
`;

const calls = () => ((globalThis as { __channelCalls?: Array<Record<string, unknown>> }).__channelCalls ??= []);

let bundle: RuntimeBundle;
beforeAll(async () => {
  const agentDir = join(tempDir("al-channel-failure-agent-"), "agent");
  const files = {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", instructions: "Test." });\n`,
    "channels/tells.ts": channel("/tells", true),
    "channels/silent.ts": channel("/silent", false),
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  bundle = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
});

/** An engine whose turn fails when the message says so. */
const failing: AgentHarness = {
  name: "failing",
  async runTurn(input) {
    if (JSON.stringify(input.context.messages).includes("please fail")) throw new AssemblyLineError("AL_ERR_HARNESS", "the engine broke at 10.0.0.7");
    return { status: "completed", response: { text: "fine" } };
  },
};

describe("a run from a channel that fails", () => {
  it("is told to the channel through deliverFailure, once, with its code and delivery metadata, never the error's text", async () => {
    calls().length = 0;
    const host = await startHost(bundle, { agentHarness: failing, outbox: { pollIntervalMs: 50, baseDelayMs: 50 } });
    const failed = await call(`${host.url}/tells`, { body: { id: "evt-1", conversation: "c-1", text: "please fail" } });
    expect(failed.status).toBe(202);
    const told = await waitFor(() => calls().find((entry) => entry.kind === "failure"), 10_000, "the failure delivery");
    expect(told).toEqual({ route: "/tells", kind: "failure", runId: failed.body.runId, code: "AL_ERR_HARNESS", deliveryMetadata: { replyToken: "token-evt-1" }, text: undefined });
    const run = await host.runtime.getRun(failed.body.runId as string);
    expect(run.status).toBe("failed");
    // A completed run is still a reply, through deliver().
    const fine = await call(`${host.url}/tells`, { body: { id: "evt-2", conversation: "c-2", text: "hello" } });
    await waitFor(() => calls().find((entry) => entry.runId === fine.body.runId), 10_000, "the reply");
    expect(calls().filter((entry) => entry.route === "/tells").map((entry) => entry.kind)).toEqual(["failure", "reply"]);
  });

  it("tells a channel without deliverFailure nothing, and owes it no delivery", async () => {
    calls().length = 0;
    const host = await startHost(bundle, { agentHarness: failing, outbox: { pollIntervalMs: 50, baseDelayMs: 50 } });
    const failed = await call(`${host.url}/silent`, { body: { id: "evt-3", conversation: "c-3", text: "please fail" } });
    await waitFor(async () => ((await host.runtime.getRun(failed.body.runId as string)).status === "failed" ? true : undefined), 10_000, "the failure");
    const fine = await call(`${host.url}/silent`, { body: { id: "evt-4", conversation: "c-4", text: "hello" } });
    await waitFor(() => calls().find((entry) => entry.runId === fine.body.runId), 10_000, "the reply");
    expect(calls()).toEqual([{ route: "/silent", kind: "reply", runId: fine.body.runId, text: "fine" }]);
    expect(await host.runtime.state.runs.claimDeliveries({ owner: "probe", ttlMs: 1_000 })).toEqual([]);
  });
});
