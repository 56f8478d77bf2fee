import { isAssemblyLineError, type HarnessContinuation } from "@assemblyline-agents/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NO_API_KEY, piAgentHarness } from "../src/index.js";
import { startOpenAIChatServer, type ScriptedModelServer } from "../src/testkit/servers/index.js";
import { JournalHarnessContext } from "./support/journal-harness-context.js";
import { turnInput } from "./support/protocols.js";

/* A host-declared model on an OpenAI-compatible server, the way Ollama or vLLM is configured. */
describe("pi harness with a host-declared local model", () => {
  let server: ScriptedModelServer & { baseUrl: string };
  beforeEach(async () => {
    server = await startOpenAIChatServer({ apiKey: NO_API_KEY });
  });
  afterEach(() => server.close());

  const localModels = () => ({ "local/llama3": { api: "openai-completions" as const, baseUrl: server.baseUrl, id: "llama3.1:8b", apiKeyEnv: false as const } });

  it("talks to a keyless server under the entry's model id", async () => {
    server.text(["Hello from llama."]);
    const result = await piAgentHarness({ models: localModels() }).runTurn(turnInput("local/llama3"), new JournalHarnessContext("run_1", {}));

    expect(result).toEqual({ status: "completed", response: { text: "Hello from llama." } });
    expect(server.requests[0]?.body.model).toBe("llama3.1:8b");
  });

  it("caps a long retry-after at retry.maxDelayMs", async () => {
    server.error(429, "Slow down", { "retry-after": "120" }).text(["Done."]);
    const started = Date.now();

    const result = await piAgentHarness({ models: localModels(), retry: { maxDelayMs: 50 } }).runTurn(turnInput("local/llama3"), new JournalHarnessContext("run_1", {}));

    expect(result).toEqual({ status: "completed", response: { text: "Done." } });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(server.requests).toHaveLength(2);
  });

  it("names the failing status and provider message when the server refuses the key", async () => {
    const models = { "local/llama3": { ...localModels()["local/llama3"], apiKeyEnv: "LOCAL_TEST_KEY" } };
    process.env.LOCAL_TEST_KEY = "wrong";
    try {
      const failure = await piAgentHarness({ models }).runTurn(turnInput("local/llama3"), new JournalHarnessContext("run_1", {})).catch((e: unknown) => e);
      expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
      expect((failure as Error).message).toContain("local/llama3: the provider answered 401");
      expect((failure as Error).message).toContain("Incorrect API key provided");
      expect((failure as Error).message).toContain("Check the API key");
    } finally {
      delete process.env.LOCAL_TEST_KEY;
    }
  });

  it("retries a connection that fails before any response, then reports it", async () => {
    const models = localModels();
    await server.close();

    const failure = await piAgentHarness({ models, retry: { maxRetries: 1, initialDelayMs: 5 } })
      .runTurn(turnInput("local/llama3"), new JournalHarnessContext("run_1", {}))
      .catch((e: unknown) => e);

    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
    expect((failure as Error).message).toContain("local/llama3: the provider failed on all 2 attempts: Connection error.");
  });

  it("refuses a continuation of another engine or format", async () => {
    const harness = piAgentHarness({ models: localModels() });
    const foreign: HarnessContinuation[] = [
      { version: 1, harness: "codex", agentRevision: "rev_1", data: {} },
      { version: 2, harness: "pi", agentRevision: "rev_1", data: {} },
      { version: 1, harness: "pi", agentRevision: "rev_1", data: { messages: "nope" } },
    ];
    for (const continuation of foreign) {
      const failure = await harness.runTurn(turnInput("local/llama3", { continuation }), new JournalHarnessContext("run_1", {})).catch((e: unknown) => e);
      expect(isAssemblyLineError(failure, "AL_ERR_CONTINUATION_VERSION")).toBe(true);
    }
    expect(server.requests).toHaveLength(0);
  });

  it("sends the runtime's prior transcript, tool turns included", async () => {
    server.text(["Still 18°C."]);
    const input = turnInput("local/llama3");
    input.context.messages = [
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: "", toolCalls: [{ id: "call_0", name: "get_weather", input: { city: "Paris" } }] },
      { role: "tool", toolCallId: "call_0", name: "get_weather", content: { celsius: 18 } },
      { role: "assistant", content: "18°C." },
      { role: "user", content: "And now?" },
    ];

    await piAgentHarness({ models: localModels() }).runTurn(input, new JournalHarnessContext("run_1", {}));

    const sent = server.requests[0]!.body.messages.map((m: any) => [m.role, m.tool_call_id ?? m.tool_calls?.[0]?.id ?? null]);
    expect(sent).toEqual([
      ["system", null],
      ["user", null],
      ["assistant", "call_0"],
      ["tool", "call_0"],
      ["assistant", null],
      ["user", null],
    ]);
  });
});
