import { afterEach, describe, expect, it } from "vitest";
import type { AgentHarness, TelemetrySpan } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

const sinks = globalThis as unknown as { __cachedTokenSpans?: TelemetrySpan[] };
afterEach(() => void delete sinks.__cachedTokenSpans);

const INSTRUMENTATION = `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({
  serviceName: "cached-tokens-test",
  captureContent: "usage",
  setup: () => ({ export(span) { (globalThis.__cachedTokenSpans ??= []).push(span); } }),
});
`;

/** A model that served part of each prompt from its cache and wrote part of it there, as a usage record keeps them: apart. */
function cachingModel(inner: AgentHarness): AgentHarness {
  const usage = { inputTokens: 100, outputTokens: 9, cacheReadTokens: 800, cacheWriteTokens: 50, costUsd: 0.001 };
  return { name: inner.name, runTurn: (input, ctx) => inner.runTurn(input, { ...ctx, emit: (type, data) => ctx.emit(type, type === "model.response" ? { ...data, provider: "anthropic", model: "claude-test", usage } : data) }) };
}

describe("telemetry of cached prompt tokens", () => {
  it("counts a prompt's cached tokens in gen_ai.usage.input_tokens, as the GenAI conventions ask, and names them apart too", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "instrumentation.ts": INSTRUMENTATION });
    const { artifactRoot } = await buildAgent(dir);
    const runtime = new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state: new InMemoryStateAdapter(), agentHarness: cachingModel(scriptedHarness({ turns: [{ text: "hello" }] })), logger: noopLogger() });
    expect((await runtime.run({ message: "hi" })).status).toBe("completed");
    await runtime.close();
    const spans = sinks.__cachedTokenSpans ?? [];
    const chat = spans.find((span) => span.attributes["gen_ai.operation.name"] === "chat")!;
    expect(chat.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 950,
      "gen_ai.usage.cache_read.input_tokens": 800,
      "gen_ai.usage.cache_creation.input_tokens": 50,
      "gen_ai.usage.output_tokens": 9,
    });
    const run = spans.find((span) => span.attributes["gen_ai.operation.name"] === "invoke_agent")!;
    expect(run.attributes).toMatchObject({ "gen_ai.usage.input_tokens": 950, "gen_ai.usage.output_tokens": 9 });
  });
});
