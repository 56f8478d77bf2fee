import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, type RuntimeOptions } from "@assemblyline-agents/runtime";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { NO_API_KEY, piAgentHarness } from "../src/index.js";
import { startOpenAIChatServer, type ScriptedModelServer } from "../src/testkit/servers/index.js";

/* Token and cost budgets counted from the usage a provider reported on the wire. */
const folders: string[] = [];
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

function lookupAgent(extraFiles: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "al-pi-budget-"));
  folders.push(dir);
  const files = {
    ...extraFiles,
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "local/priced", instructions: "Look things up." });
`,
    "tools/lookup.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Look a word up.",
  inputSchema: { type: "object", properties: { word: { type: "string" } }, required: ["word"], additionalProperties: false },
  defaultEnabled: true,
  async execute(input) { return { found: input.word }; },
});
`,
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

describe("budgets against a provider's reported usage", () => {
  let server: ScriptedModelServer & { baseUrl: string };
  beforeEach(async () => {
    server = await startOpenAIChatServer({ apiKey: NO_API_KEY });
  });
  afterEach(() => server.close());

  async function runtime(options: Partial<RuntimeOptions>, extraFiles: Record<string, string> = {}, priced = true) {
    const bundle = await loadRuntimeBundle((await buildAgent(lookupAgent(extraFiles))).artifactRoot);
    // USD per million tokens: a call of 40 input + 9 output tokens costs 0.04 + 0.018 = 0.058.
    const harness = piAgentHarness({
      models: { "local/priced": { api: "openai-completions", baseUrl: server.baseUrl, apiKeyEnv: false, ...(priced ? { cost: { input: 1000, output: 2000 } } : {}) } },
    });
    return new OpenEveRuntime({ ...bundle, state: new InMemoryStateAdapter(), defaultHarness: harness, logger: noopLogger(), ...options });
  }

  const lookup = (id: string) => [{ id, name: "lookup", argumentChunks: ['{"word":"', 'milk"}'] }];

  it("stops before the model call that would go past maxCostUsd, with the exact usage", async () => {
    const host = await runtime({ budgets: { maxCostUsd: 0.1 } });
    server.toolCalls(lookup("c1"), { inputTokens: 40, outputTokens: 9 }).toolCalls(lookup("c2"), { inputTokens: 40, outputTokens: 9 }).text(["never"], { inputTokens: 40, outputTokens: 9 });
    const result = await host.run({ message: "look up milk twice" });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("AL_ERR_BUDGET_EXCEEDED");
    expect(server.requests).toHaveLength(2);
    const events = await host.listEvents(result.runId);
    expect(events.find((event) => event.type === "budget.exceeded")?.data).toEqual({ budget: "maxCostUsd", limit: 0.1, used: 0.116, action: "fail" });
    await host.close();
  });

  it("warns once that maxCostUsd cannot stop a model declared without prices, whose calls cost $0", async () => {
    const warnings: Array<Record<string, unknown>> = [];
    const host = await runtime({ budgets: { maxCostUsd: 0.0001 }, logger: { ...noopLogger(), warn: (fields: Record<string, unknown>) => void warnings.push(fields) } }, {}, false);
    // 100,000 tokens a call, at no price: the budget is never reached.
    for (const id of ["c1", "c2", "c3"]) server.toolCalls(lookup(id), { inputTokens: 90_000, outputTokens: 10_000 });
    server.text(["done"], { inputTokens: 90_000, outputTokens: 10_000 });
    const result = await host.run({ message: "look up milk" });
    expect(result.status).toBe("completed");
    expect(server.requests).toHaveLength(4);
    expect((await host.state.usage.listUsage({ runId: result.runId })).every((record) => record.costUsd === 0)).toBe(true);
    expect(warnings.filter((fields) => fields.event === "budget.unpriced_model")).toEqual([
      { runId: result.runId, event: "budget.unpriced_model", budget: "maxCostUsd", limit: 0.0001, model: "local/priced" },
    ]);
    await host.close();
  });

  it("counts a conversation's tokens across its runs for the day", async () => {
    const host = await runtime({ budgets: { maxConversationTokensPerDay: 100 } });
    server.toolCalls(lookup("c1"), { inputTokens: 40, outputTokens: 9 }).text(["first"], { inputTokens: 40, outputTokens: 9 });
    expect((await host.run({ message: "one", conversationId: "chat-1" })).status).toBe("completed");

    server.toolCalls(lookup("c2"), { inputTokens: 40, outputTokens: 9 }).text(["never"], { inputTokens: 40, outputTokens: 9 });
    const second = await host.run({ message: "two", conversationId: "chat-1" });
    expect(second.error?.code).toBe("AL_ERR_BUDGET_EXCEEDED");
    expect((await host.listEvents(second.runId)).find((event) => event.type === "budget.exceeded")?.data).toEqual({
      budget: "maxConversationTokensPerDay",
      limit: 100,
      used: 147,
      action: "fail",
    });

    server.text(["other"], { inputTokens: 40, outputTokens: 9 });
    expect((await host.run({ message: "three", conversationId: "chat-2" })).status).toBe("completed");
    await host.close();
  });

  it("counts a subagent's model calls in the day of the conversation it works for", async () => {
    const helper = {
      "subagents/helper/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks things up for the parent." });
`,
    };
    const host = await runtime({ budgets: { maxConversationTokensPerDay: 100 } }, helper);
    const spawn = [{ id: "s1", name: "spawn_subagent", argumentChunks: ['{"name":"helper","task":"Find milk."}'] }];
    // The parent asks the helper (49 tokens), the helper answers (49), the parent answers (49).
    server.toolCalls(spawn, { inputTokens: 40, outputTokens: 9 }).text(["milk is white"], { inputTokens: 40, outputTokens: 9 }).text(["done"], { inputTokens: 40, outputTokens: 9 });
    const first = await host.run({ message: "one", conversationId: "chat-1" });
    expect(first.status).toBe("completed");
    const records = await host.state.usage.listUsage({ conversationId: "chat-1" });
    expect(records).toHaveLength(3);
    expect(new Set(records.map((record) => record.runId)).size).toBe(2);

    // The parent's own calls used 98 of the 100: the helper's 49 put the conversation past its day's limit.
    server.text(["never"], { inputTokens: 40, outputTokens: 9 });
    const second = await host.run({ message: "two", conversationId: "chat-1" });
    expect(second.error?.code).toBe("AL_ERR_BUDGET_EXCEEDED");
    expect((await host.listEvents(second.runId)).find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxConversationTokensPerDay", used: 147 });
    await host.close();
  });
});

describe("the default engine of an embedded runtime", () => {
  let server: ScriptedModelServer & { baseUrl: string };
  beforeEach(async () => {
    server = await startOpenAIChatServer({ apiKey: NO_API_KEY });
  });
  afterEach(() => server.close());

  it("is Pi with RuntimeOptions.models when the host passes no engine", async () => {
    const bundle = await loadRuntimeBundle((await buildAgent(lookupAgent())).artifactRoot);
    const runtime = new OpenEveRuntime({
      ...bundle,
      state: new InMemoryStateAdapter(),
      logger: noopLogger(),
      models: { "local/priced": { api: "openai-completions", baseUrl: server.baseUrl, apiKeyEnv: false } },
    });
    server.text(["Hello from the default engine."], { inputTokens: 5, outputTokens: 6 });
    const result = await runtime.run({ message: "hi" });
    expect(result.response?.text).toBe("Hello from the default engine.");
    expect(server.requests).toHaveLength(1);
    await runtime.close();
  });
});
