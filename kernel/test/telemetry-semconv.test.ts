import { afterEach, describe, expect, it } from "vitest";
import type { AgentHarness, TelemetrySpan } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness, type ScriptedTurn } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const sinks = globalThis as unknown as { __semconvSpans?: TelemetrySpan[] };
afterEach(() => void delete sinks.__semconvSpans);

const instrumentation = (captureContent: string) => `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({
  captureContent: ${JSON.stringify(captureContent)},
  setup: () => ({ export(span) { (globalThis.__semconvSpans ??= []).push(span); } }),
});
`;

/** Reports each model call as an engine on `provider` does, with that provider's own stop reasons. */
function reporting(inner: AgentHarness, provider: string, stopReasons: string[]): AgentHarness {
  let call = 0;
  return {
    name: inner.name,
    runTurn: (input, ctx) =>
      inner.runTurn(input, {
        ...ctx,
        emit: (type, data) =>
          ctx.emit(type, type === "model.response" ? { ...data, provider, model: "m-1", stopReason: stopReasons[call++] ?? "stop", usage: { inputTokens: 5, outputTokens: 1 } } : data),
      }),
  };
}

const turns: ScriptedTurn[] = [{ toolCalls: [{ name: "echo", input: { value: "a" }, id: "call_1" }] }, { text: "Done." }];

async function chatSpans(captureContent: string, provider: string, stopReasons: string[]): Promise<TelemetrySpan[]> {
  const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true }), "instrumentation.ts": instrumentation(captureContent) });
  return runSpans(dir, provider, stopReasons);
}

async function runSpans(dir: string, provider = "openai", stopReasons: string[] = [], script = turns, message = "go"): Promise<TelemetrySpan[]> {
  const { artifactRoot } = await buildAgent(dir);
  const runtime = new OpenEveRuntime({
    ...(await loadRuntimeBundle(artifactRoot)),
    state: new InMemoryStateAdapter(),
    agentHarness: reporting(scriptedHarness({ turns: script }), provider, stopReasons),
    logger: noopLogger(),
  });
  expect((await runtime.run({ message })).status).toBe("completed");
  await runtime.close();
  return (sinks.__semconvSpans ?? []).filter((span) => span.attributes["gen_ai.operation.name"] === "chat");
}

describe("chat spans in the GenAI semantic conventions' values", () => {
  it("reports provider stop reasons as semantic-convention finish reasons", async () => {
    const chats = await chatSpans("usage", "anthropic", ["toolUse", "end_turn"]);
    expect(chats.map((span) => span.attributes["gen_ai.response.finish_reasons"])).toEqual([["tool_call"], ["stop"]]);
  });

  it("names providers by their well-known gen_ai.provider.name", async () => {
    const chats = await chatSpans("usage", "google", ["max_tokens", "stop"]);
    expect(chats.map((span) => span.attributes["gen_ai.provider.name"])).toEqual(["gcp.gemini", "gcp.gemini"]);
    expect(chats[0]!.attributes["gen_ai.response.finish_reasons"]).toEqual(["length"]);
  });

  it("gives each captured output message the finish_reason the conventions require", async () => {
    const chats = await chatSpans("content", "openai", ["toolUse", "stop"]);
    const outputs = chats.map((span) => JSON.parse(String(span.attributes["gen_ai.output.messages"])) as Array<Record<string, unknown>>);
    expect(outputs.map((messages) => messages[0]!.finish_reason)).toEqual(["tool_call", "stop"]);
    const root = (sinks.__semconvSpans ?? []).find((span) => span.attributes["gen_ai.operation.name"] === "invoke_agent")!;
    expect(JSON.parse(String(root.attributes["gen_ai.output.messages"]))).toEqual([{ role: "assistant", parts: [{ type: "text", content: "Done." }], finish_reason: "stop" }]);
  });
});

describe("the run's span in the GenAI semantic conventions' forms", () => {
  it("records full's system instructions as the conventions' list of parts", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true }), "instrumentation.ts": instrumentation("full") });
    await runSpans(dir);
    const root = (sinks.__semconvSpans ?? []).find((span) => span.attributes["gen_ai.operation.name"] === "invoke_agent")!;
    expect(JSON.parse(String(root.attributes["gen_ai.system_instructions"]))).toEqual([{ type: "text", content: "You are a test agent." }]);
  });

  it("keeps long messages JSON a backend can read: each part's text is cut, not the attribute", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "instrumentation.ts": instrumentation("content") });
    const reply = "r".repeat(10_000);
    const chats = await runSpans(dir, "openai", [], [{ text: reply }], "q".repeat(9_000));
    const root = (sinks.__semconvSpans ?? []).find((span) => span.attributes["gen_ai.operation.name"] === "invoke_agent")!;
    const output = JSON.parse(String(root.attributes["gen_ai.output.messages"])) as Array<{ parts: Array<{ content: string }>; finish_reason: string }>;
    expect(output[0]!.finish_reason).toBe("stop");
    expect(output[0]!.parts[0]!.content).toBe(`${"r".repeat(4_096)}…[truncated 5904 chars]`);
    const input = JSON.parse(String(root.attributes["gen_ai.input.messages"])) as Array<{ role: string; parts: Array<{ content: string }> }>;
    expect(input[0]!.role).toBe("user");
    expect(input[0]!.parts[0]!.content).toMatch(/^q{4096}…\[truncated \d+ chars\]$/);
    const chatOutput = JSON.parse(String(chats[0]!.attributes["gen_ai.output.messages"])) as Array<{ parts: Array<{ content: string }> }>;
    expect(chatOutput[0]!.parts[0]!.content.length).toBeLessThan(4_096 + 40);
  });
});
