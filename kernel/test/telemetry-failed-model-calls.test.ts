import { afterEach, describe, expect, it } from "vitest";
import type { TelemetrySpan } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, type RuntimeOptions } from "@assemblyline-agents/runtime";
import { NO_API_KEY, piAgentHarness } from "@assemblyline-agents/pi";
import { startOpenAIChatServer, type ScriptedModelServer } from "@assemblyline-agents/pi/testkit";
import { agentFolder, toolSource } from "./support/agent-folder.js";

/*
 * Model calls that throw, made by the Pi engine against a local server speaking
 * OpenAI's chat-completions protocol: each must leave a chat span that ends
 * with the error, as the GenAI conventions ask, under the run's failed root.
 */

const collected = globalThis as unknown as { __failedCallSpans?: TelemetrySpan[]; __beforeSecondCall?: () => Promise<void> };
let server: ScriptedModelServer & { baseUrl: string };
afterEach(async () => {
  delete collected.__failedCallSpans;
  delete collected.__beforeSecondCall;
  await server?.close();
});

const MODEL = "openai/gpt-4o-mini";

async function runtimeFor(captureContent: "usage" | "content", options: Partial<RuntimeOptions> = {}) {
  server = await startOpenAIChatServer({ apiKey: NO_API_KEY });
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: ${JSON.stringify(MODEL)}, instructions: "Help." });
`,
    "tools/echo.ts": toolSource({ upFront: true, execute: "await globalThis.__beforeSecondCall?.(); return { echoed: input.value };" }),
    "instrumentation.ts": `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({
  captureContent: ${JSON.stringify(captureContent)},
  setup: () => ({ export(span) { (globalThis.__failedCallSpans ??= []).push(span); } }),
});
`,
  });
  const { artifactRoot } = await buildAgent(dir);
  const engine = piAgentHarness({
    models: { [MODEL]: { api: "openai-completions", baseUrl: server.baseUrl, apiKeyEnv: false } },
    retry: { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 5 },
  });
  return new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state: new InMemoryStateAdapter(), agentHarness: engine, logger: noopLogger(), ...options });
}

const spans = () => collected.__failedCallSpans ?? [];
const chats = () => spans().filter((span) => span.attributes["gen_ai.operation.name"] === "chat");
const root = () => spans().find((span) => span.attributes["gen_ai.operation.name"] === "invoke_agent")!;

/** The failed chat span sits in the run's trace, under its root, inside its time. */
function expectInsideRun(chat: TelemetrySpan): void {
  expect(chat.traceId).toBe(root().traceId);
  expect(chat.parentSpanId).toBe(root().spanId);
  expect(chat.startTimeMs).toBeGreaterThanOrEqual(root().startTimeMs);
  expect(chat.endTimeMs).toBeLessThanOrEqual(root().endTimeMs);
}

describe("a model call that throws ends its chat span with the error", () => {
  it("when the provider answers 500 on every try", async () => {
    const runtime = await runtimeFor("usage");
    server.error(500, "upstream exploded").error(500, "upstream exploded");
    const result = await runtime.run({ message: "hi" });
    await runtime.close();
    expect(result.status).toBe("failed");
    expect(server.requests).toHaveLength(2);
    expect(chats()).toHaveLength(1);
    const [chat] = chats();
    expect(chat).toMatchObject({ name: "chat gpt-4o-mini", kind: "client", status: { code: "error", message: "AL_ERR_MODEL_PROVIDER" } });
    expect(chat!.attributes).toMatchObject({ "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini", "error.type": "AL_ERR_MODEL_PROVIDER" });
    // usage: the provider's message can quote the prompt; only the code leaves the process.
    expect(JSON.stringify(spans())).not.toContain("upstream exploded");
    expectInsideRun(chat!);
    expect(root()).toMatchObject({ status: { code: "error" }, attributes: { "error.type": "AL_ERR_MODEL_PROVIDER" } });
  });

  it("when the provider cannot be reached, after a call that succeeded", async () => {
    const runtime = await runtimeFor("content");
    server.toolCalls([{ id: "call_1", name: "echo", argumentChunks: ['{"value":', '"a"}'] }], { inputTokens: 10, outputTokens: 2 });
    // The provider goes away while the tool runs: the second call finds no one listening, on every try.
    collected.__beforeSecondCall = () => server.close();
    const result = await runtime.run({ message: "hi" });
    await runtime.close();
    expect(result.status).toBe("failed");
    expect(chats().map((span) => span.status.code)).toEqual(["ok", "error"]);
    const failed = chats()[1]!;
    expect(failed.attributes["error.type"]).toBe("AL_ERR_MODEL_PROVIDER");
    // content: the error's message is kept, as for failed tool calls and runs.
    expect(failed.status.message).toMatch(/openai\/gpt-4o-mini: the provider failed on all 2 attempts: Connection error/);
    expect(failed.spanId).not.toBe(chats()[0]!.spanId);
    expect(failed.startTimeMs).toBeGreaterThanOrEqual(spans().find((span) => span.name === "execute_tool echo")!.endTimeMs);
    expectInsideRun(failed);
  });

  it("when the run's budget refuses it", async () => {
    const runtime = await runtimeFor("usage", { budgets: { maxTurns: 1 } });
    server.toolCalls([{ id: "call_1", name: "echo", argumentChunks: ['{"value":"a"}'] }]);
    const result = await runtime.run({ message: "hi" });
    await runtime.close();
    expect(result.status).toBe("failed");
    // The second call never reached the provider.
    expect(server.requests).toHaveLength(1);
    expect(chats().map((span) => [span.status.code, span.attributes["error.type"]])).toEqual([
      ["ok", undefined],
      ["error", "AL_ERR_BUDGET_EXCEEDED"],
    ]);
    expectInsideRun(chats()[1]!);
  });
});
