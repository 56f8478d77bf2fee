import { isAssemblyLineError, type AgentHarness, type JsonValue } from "@assemblyline-agents/core";
import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { piAgentHarness, resolvePiModel, type PiHarnessOptions } from "../src/index.js";
import type { ScriptedModelServer } from "../src/testkit/servers/index.js";
import { JournalHarnessContext, type RecordedUsage, type TestTool } from "./support/journal-harness-context.js";
import { startOpenAIResponsesServer } from "./support/openai-responses-server.js";
import { anthropicMessages, openAIChat, turnInput, type ProtocolCase } from "./support/protocols.js";

const tools: Record<string, TestTool> = {
  get_weather: { run: (input) => ({ city: (input as { city: string }).city, celsius: 18 }) },
  get_time: { run: () => "14:05" },
  deploy: { run: () => ({ deployed: true }), approval: true },
  explode: { run: () => { throw new Error("disk full"); } },
};

const fastRetry = { initialDelayMs: 5, maxDelayMs: 5_000 };

describe.each([openAIChat, anthropicMessages])("pi harness against $name", (protocol: ProtocolCase) => {
  let server: ScriptedModelServer & { baseUrl: string };
  const savedEnv = new Map<string, string | undefined>();

  beforeEach(async () => {
    server = await protocol.start();
    for (const name of [protocol.keyVariable, ...protocol.otherKeyVariables]) {
      savedEnv.set(name, process.env[name]);
      delete process.env[name];
    }
    process.env[protocol.keyVariable] = protocol.apiKey;
  });

  afterEach(async () => {
    await server.close();
    for (const [name, value] of savedEnv) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  const harness = (options: PiHarnessOptions = {}): AgentHarness =>
    piAgentHarness({ models: protocol.models(server.baseUrl), retry: fastRetry, ...options });

  it("runs two tool calls through the runtime and returns the final answer", async () => {
    server
      .toolCalls([
        { id: "call_1", name: "get_weather", argumentChunks: ['{"city":"Paris"}'] },
        { id: "call_2", name: "get_time", argumentChunks: ['{"city":"Paris"}'] },
      ])
      .text(["It is 18°C", " and 14:05 in Paris."]);
    const ctx = new JournalHarnessContext("run_1", tools);

    const result = await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(result).toEqual({ status: "completed", response: { text: "It is 18°C and 14:05 in Paris." } });
    expect(ctx.toolCalls).toEqual([
      { id: "call_1", name: "get_weather", input: { city: "Paris" } },
      { id: "call_2", name: "get_time", input: { city: "Paris" } },
    ]);
    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests.map((r) => r.body);
    expect(protocol.systemPromptIn(first)).toBe("You are a weather agent. Use the tools.");
    expect(protocol.toolNamesIn(first)).toEqual(["get_weather", "get_time", "deploy"]);
    expect(protocol.toolResultsIn(second)).toEqual([
      { id: "call_1", content: '{"city":"Paris","celsius":18}' },
      { id: "call_2", content: "14:05" },
    ]);
    expect(ctx.stepsRun).toEqual(["model:1", "model:2"]);
    const responses = ctx.eventsOfType("model.response");
    expect(responses.map((r) => [r.step, r.toolCalls, r.stopReason])).toEqual([
      ["model:1", ["get_weather", "get_time"], "toolUse"],
      ["model:2", [], "stop"],
    ]);
    expect(responses[1]?.text).toBe("It is 18°C and 14:05 in Paris.");
  });

  it("answers a tool call under an id an earlier reply used with an id of its own, which a replay keeps", async () => {
    server
      .toolCalls([{ id: "call_1", name: "get_time", argumentChunks: ['{"city":"Paris"}'] }])
      .toolCalls([{ id: "call_1", name: "get_weather", argumentChunks: ['{"city":"Paris"}'] }])
      .text(["18°C at 14:05."]);
    const first = new JournalHarnessContext("run_1", tools);

    await harness().runTurn(turnInput(protocol.spec), first);

    expect(first.toolCalls.map((c) => [c.id, c.name])).toEqual([
      ["call_1", "get_time"],
      ["model2_call0", "get_weather"],
    ]);
    expect(protocol.toolResultsIn(server.requests[2]!.body).map((r) => r.id)).toEqual(["call_1", "model2_call0"]);
    // A crash-recovered turn replays the journaled replies under the ids they were stored with.
    const recovered = new JournalHarnessContext("run_1", tools, { journal: first.journal, toolResults: first.toolResults });
    await harness().runTurn(turnInput(protocol.spec), recovered);
    expect(recovered.toolCalls.map((c) => c.id)).toEqual(["call_1", "model2_call0"]);
    expect(server.requests).toHaveLength(3);
  });

  it("replays a reply journaled before tool calls were given ids of their own under the ids it holds", async () => {
    server
      .toolCalls([{ id: "call_1", name: "get_time", argumentChunks: ['{"city":"Paris"}'] }])
      .toolCalls([{ id: "call_1", name: "get_time", argumentChunks: ['{"city":"Oslo"}'] }])
      .text(["Done."]);
    const first = new JournalHarnessContext("run_1", tools);
    await harness().runTurn(turnInput(protocol.spec), first);
    // What the engine stored then: the provider's repeated id.
    const journal = new Map([...first.journal].map(([key, json]) => [key, json.replaceAll("model2_call0", "call_1")]));

    const replayed = new JournalHarnessContext("run_1", tools, { journal });
    await harness().runTurn(turnInput(protocol.spec), replayed);

    expect(replayed.toolCalls.map((c) => c.id)).toEqual(["call_1", "call_1"]);
    expect(replayed.stepsReplayed).toEqual(["model:1", "model:2", "model:3"]);
    expect(server.requests).toHaveLength(3);
  });

  it("assembles tool-call arguments that arrive in several chunks", async () => {
    server
      .toolCalls([{ id: "call_1", name: "get_weather", argumentChunks: ['{"ci', 'ty": "Pa', 'ris", "days": [1,', " 2]", "}"] }])
      .text(["Done."]);
    const ctx = new JournalHarnessContext("run_1", tools);

    await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(ctx.toolCalls).toEqual([{ id: "call_1", name: "get_weather", input: { city: "Paris", days: [1, 2] } }]);
  });

  it("does not run a tool call whose arguments the output limit cut off, and tells the model what it sent", async () => {
    server
      .enqueue({
        kind: "stream",
        toolCalls: [
          { id: "call_1", name: "get_time", argumentChunks: ['{"city":"Oslo"}'] },
          { id: "call_2", name: "get_weather", argumentChunks: ['{"city": "Par'] },
        ],
        stop: "max_tokens",
      })
      .text(["Let me try again."]);
    const ctx = new JournalHarnessContext("run_1", tools);

    const result = await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(result).toEqual({ status: "completed", response: { text: "Let me try again." } });
    // Neither call runs: the reply was cut short, so even its complete-looking call may not be all that was meant.
    expect(ctx.toolCalls).toEqual([]);
    const results = protocol.toolResultsIn(server.requests[1]!.body);
    expect(results.map((r) => r.id)).toEqual(["call_1", "call_2"]);
    expect(results[0]!.content).toContain("the reply this get_time call was part of was cut off by the output token limit");
    expect(results[1]!.content).toContain("the arguments of this get_weather call were cut off by the output token limit");
    expect(results[1]!.content).toContain('{"city": "Par');
    expect(ctx.eventsOfType("model.response")[0]?.refusedToolCalls).toEqual([
      { id: "call_1", name: "get_time", error: results[0]!.content },
      { id: "call_2", name: "get_weather", error: results[1]!.content },
    ]);
  });

  it("does not run a tool call whose arguments are not a JSON object, and runs the others of the reply", async () => {
    server
      .toolCalls([
        { id: "call_1", name: "get_weather", argumentChunks: ["city=Paris"] },
        { id: "call_2", name: "get_time", argumentChunks: ['{"city":"Paris"}'] },
        { id: "call_3", name: "get_weather", argumentChunks: ['{"city": "Rome", "days": [1', "] tr"] },
      ])
      .text(["Done."]);
    const ctx = new JournalHarnessContext("run_1", tools);

    await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(ctx.toolCalls).toEqual([{ id: "call_2", name: "get_time", input: { city: "Paris" } }]);
    const results = protocol.toolResultsIn(server.requests[1]!.body);
    expect(results.map((r) => r.id)).toEqual(["call_1", "call_2", "call_3"]);
    expect(results[0]!.content).toMatch(/^Not run: the arguments of this get_weather call are not valid JSON\..*\ncity=Paris$/s);
    expect(results[1]!.content).toBe("14:05");
    expect(results[2]!.content).toContain('{"city": "Rome", "days": [1] tr');
  });

  it("streams text deltas to the host while the reply is still arriving", async () => {
    let release!: () => void;
    const firstDeltaSeen = new Promise<void>((resolve) => (release = resolve));
    // The server holds the rest of the reply until the host has seen the first delta.
    server.enqueue({ kind: "stream", text: ["Hel", "lo ", "world"], holdAfter: { events: 1, until: firstDeltaSeen } });
    const ctx = new JournalHarnessContext("run_1", tools);
    ctx.onTextDelta = () => release();

    const result = await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(ctx.deltas).toEqual(["Hel", "lo ", "world"]);
    expect(result).toEqual({ status: "completed", response: { text: "Hello world" } });
    // Only the completed message is durable.
    expect([...ctx.journal.keys()]).toEqual(["model:1"]);
  }, 10_000);

  it("waits out a 429's retry-after, then succeeds, with the SDK's own retries off", async () => {
    server.error(429, "Rate limit reached for requests", { "retry-after": protocol.retryAfterOneSecond() }).text(["Hi."]);
    const ctx = new JournalHarnessContext("run_1", tools);
    const started = Date.now();

    const result = await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(result).toEqual({ status: "completed", response: { text: "Hi." } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(server.requests.map((r) => r.headers["x-stainless-retry-count"])).toEqual(["0", "0"]);
    expect(ctx.logs.filter((l) => l.level === "warn").map((l) => l.fields.status)).toEqual([429]);
  });

  it("asks again when the connection drops after the provider accepted the request, before any text", async () => {
    server.enqueue({ kind: "stream", text: ["never sent"], breakAfter: { events: 0, with: "drop" } }).text(["Hi", " there."]);
    const ctx = new JournalHarnessContext("run_1", tools);

    const result = await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(result).toEqual({ status: "completed", response: { text: "Hi there." } });
    expect(server.requests).toHaveLength(2);
    expect(ctx.deltas).toEqual(["Hi", " there."]);
  });

  it("asks again when the provider sends an overloaded error inside the stream, and counts the failed attempt's reported usage", async () => {
    server
      .enqueue({ kind: "stream", text: ["never sent"], usage: { inputTokens: 900, outputTokens: 0 }, breakAfter: { events: 0, with: { kind: "error", status: 529, message: "Overloaded" } } })
      .text(["Hi."], { inputTokens: 900, outputTokens: 3 });
    const ctx = new JournalHarnessContext("run_1", tools);

    const result = await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(result).toEqual({ status: "completed", response: { text: "Hi." } });
    expect(server.requests).toHaveLength(2);
    expect(ctx.logs.filter((l) => l.level === "warn").map((l) => l.fields.error)).toEqual([expect.stringContaining("Overloaded")]);
    const usage = [...ctx.usage.values()].map((u) => [u.inputTokens, u.outputTokens]);
    // Anthropic reports the prompt's tokens when the stream opens, so the failed attempt is billed; OpenAI reports usage only at the end.
    expect(usage).toEqual(protocol === anthropicMessages ? [[900, 1], [900, 3]] : [[900, 3]]);
  });

  it("asks again after part of the reply was streamed, telling the host first that what it showed is void", async () => {
    server
      .enqueue({ kind: "stream", text: ["The capital ", "of France"], breakAfter: { events: 1, with: { kind: "error", status: 500, message: "The server had an error while processing your request." } } })
      .text(["The capital of France is Paris."]);
    const ctx = new JournalHarnessContext("run_1", tools);

    const result = await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(result).toEqual({ status: "completed", response: { text: "The capital of France is Paris." } });
    expect(server.requests).toHaveLength(2);
    // One delta shown, then the restart, then the reply from its start: the host never takes the two for one text.
    expect(ctx.restarts).toEqual([1]);
    expect(ctx.deltas.slice(1).join("")).toBe("The capital of France is Paris.");
  });

  it("asks again when the stream ends cleanly before the provider's end marker, never taking the part received for the reply", async () => {
    server
      .enqueue({ kind: "stream", text: ["The deploy is safe to run bec", "ause nothing changed."], breakAfter: { events: 1, with: "end" } })
      .text(["The deploy is safe to run because nothing changed."]);
    const ctx = new JournalHarnessContext("run_1", tools);

    const result = await harness({ retry: { ...fastRetry, maxRetries: 1 } }).runTurn(turnInput(protocol.spec), ctx);

    expect(result).toEqual({ status: "completed", response: { text: "The deploy is safe to run because nothing changed." } });
    expect(server.requests).toHaveLength(2);
    expect(ctx.restarts).toEqual([1]);
    expect(ctx.eventsOfType("model.response").map((r) => r.text)).toEqual(["The deploy is safe to run because nothing changed."]);
  });

  it("fails the run naming the missing end when every attempt's stream ends before it", async () => {
    for (let i = 0; i < 2; i += 1) server.enqueue({ kind: "stream", text: ["Half an ans", "wer."], breakAfter: { events: 1, with: "end" } });
    const ctx = new JournalHarnessContext("run_1", tools);

    const failure = await harness({ retry: { ...fastRetry, maxRetries: 1 } }).runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
    expect(String((failure as Error).message)).toMatch(/broke off the stream on all 2 attempts: .*stream ended before/);
    expect(server.requests).toHaveLength(2);
    expect(ctx.journal.size).toBe(0);
  });

  it("never runs a complete tool call of a reply whose stream ended before the provider's end marker", async () => {
    server.enqueue({
      kind: "stream",
      toolCalls: [
        { id: "call_1", name: "deploy", argumentChunks: ['{"city":"Paris"}'] },
        { id: "call_2", name: "get_time", argumentChunks: ['{"city":"Paris"}'] },
      ],
      breakAfter: { events: 2, with: "end" },
    });
    const ran: string[] = [];
    const watched = { ...tools, get_weather: { run: () => (ran.push("get_weather"), "18") }, deploy: { run: () => (ran.push("deploy"), "deployed") } };
    const ctx = new JournalHarnessContext("run_1", watched);

    const failure = await harness({ retry: { ...fastRetry, maxRetries: 0 } }).runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
    expect(ran).toEqual([]);
    expect(ctx.toolCalls).toEqual([]);
    expect(ctx.journal.size).toBe(0);
  });

  it("records both calls when a crash lost a model call's result and the model was asked again", async () => {
    server.text(["First."], { inputTokens: 100, outputTokens: 5 }).text(["Second."], { inputTokens: 120, outputTokens: 6 });
    const usageStore = new Map<string, RecordedUsage>();
    const keepFirstPerId = (ctx: JournalHarnessContext) => [...ctx.usage.values()].forEach((u) => usageStore.has(u.id) || usageStore.set(u.id, u));

    const first = new JournalHarnessContext("run_1", tools);
    await harness().runTurn(turnInput(protocol.spec), first);
    keepFirstPerId(first);
    // The step's completion never committed: the recovered turn starts from an empty journal and asks again.
    const recovered = new JournalHarnessContext("run_1", tools);
    await harness().runTurn(turnInput(protocol.spec), recovered);
    keepFirstPerId(recovered);

    expect(server.requests).toHaveLength(2);
    expect([...usageStore.values()].map((u) => [u.inputTokens, u.outputTokens])).toEqual([
      [100, 5],
      [120, 6],
    ]);
  });

  it("fails the run with the provider's message after a 500 on every attempt", async () => {
    for (let i = 0; i < 3; i += 1) server.error(500, "The server had an error while processing your request.");
    const ctx = new JournalHarnessContext("run_1", tools);

    const failure = await harness({ retry: { ...fastRetry, maxRetries: 2 } }).runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
    expect(String((failure as Error).message)).toMatch(/answered 500 on all 3 attempts: .*The server had an error while processing your request\./);
    // Three requests for maxRetries 2, each a first try for the SDK: the retries are not multiplied.
    expect(server.requests.map((r) => r.headers["x-stainless-retry-count"])).toEqual(["0", "0", "0"]);
    expect(ctx.journal.size).toBe(0);
    expect(ctx.usage.size).toBe(0);
  });

  it("fails at once on a 4xx that cannot succeed", async () => {
    server.error(400, "Invalid schema for function 'get_weather'.");
    const ctx = new JournalHarnessContext("run_1", tools);

    const failure = await harness().runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
    expect(String((failure as Error).message)).toContain("answered 400: 400");
    expect(String((failure as Error).message)).toContain("Invalid schema for function 'get_weather'.");
    expect(server.requests).toHaveLength(1);
  });

  it("never shows the API key or a configured header's value that a provider echoes, in the error or the logs", async () => {
    const gatewayToken = "gw-token-0123456789";
    const basic = `Basic ${Buffer.from(`me:${gatewayToken}`).toString("base64")}`;
    const echo = `upstream refused key ${protocol.apiKey} with x-gateway-token ${gatewayToken}; headers ${JSON.stringify({ "x-api-key": protocol.apiKey, authorization: basic })}`;
    server.error(503, echo).error(503, echo);
    const models = protocol.models(server.baseUrl);
    const withHeader = { [protocol.spec]: { ...models[protocol.spec], headers: { "x-gateway-token": gatewayToken } } };
    const ctx = new JournalHarnessContext("run_1", tools);

    const failure = await harness({ models: withHeader, retry: { ...fastRetry, maxRetries: 1 } }).runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect(server.requests[0]!.headers["x-gateway-token"]).toBe(gatewayToken);
    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
    const shown = JSON.stringify({ message: (failure as Error).message, details: (failure as { details?: unknown }).details, logs: ctx.logs });
    expect(shown).toContain("upstream refused key [redacted] with x-gateway-token [redacted]");
    expect(shown).not.toContain(protocol.apiKey);
    expect(shown).not.toContain(gatewayToken);
    // Quoted inside the echoed headers too, as JSON and base64.
    expect(shown).not.toContain(basic.slice(6));
  });

  it("never shows the credentials inside a configured auth header when a gateway echoes them without the scheme", async () => {
    const token = "cfgw-secret-token-0123456789";
    const password = "proxy-pass-98765";
    const headers = {
      "cf-aig-authorization": `Bearer ${token}`,
      "proxy-authorization": `Basic ${Buffer.from(`agent:${password}`).toString("base64")}`,
      // Parts this short are left alone: "admin" is likelier a word of the message than what leaked.
      "x-short-authorization": `Basic ${Buffer.from("bot:admin").toString("base64")}`,
    };
    server.error(401, `gateway: invalid token ${token}; proxy refused agent:${password} (password ${password}) at the admin console`);
    const models = protocol.models(server.baseUrl);
    const ctx = new JournalHarnessContext("run_1", tools);

    const failure = await harness({ models: { [protocol.spec]: { ...models[protocol.spec], headers } } }).runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect(server.requests[0]!.headers["cf-aig-authorization"]).toBe(`Bearer ${token}`);
    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
    const shown = JSON.stringify({ message: (failure as Error).message, logs: ctx.logs });
    expect(shown).toContain("invalid token [redacted]; proxy refused [redacted] (password [redacted]) at the admin console");
    expect(shown).not.toContain(token);
    expect(shown).not.toContain(password);
  });

  it("never shows the query of the base URL when the provider echoes the request URL", async () => {
    const models = protocol.models(`${server.baseUrl}?key=query-secret-42`);
    const ctx = new JournalHarnessContext("run_1", tools);

    const failure = await harness({ models }).runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    // The SDK appends its path after the query; the server's 404 names the URL it got.
    expect(server.requests[0]!.path).toContain("query-secret-42");
    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
    expect((failure as Error).message).toContain("404");
    expect((failure as Error).message).not.toContain("query-secret-42");
  });

  it("records usage with the exact token counts the server reported", async () => {
    server
      .toolCalls([{ id: "call_1", name: "get_time", argumentChunks: ['{"city":"Oslo"}'] }], { inputTokens: 1234, outputTokens: 56, cacheReadTokens: 800 })
      .text(["Noon."], { inputTokens: 1311, outputTokens: 7, cacheReadTokens: 2048, ...(protocol === anthropicMessages ? { cacheWriteTokens: 64 } : {}) });
    const ctx = new JournalHarnessContext("run_1", tools);

    await harness().runTurn(turnInput(protocol.spec), ctx);

    const model = resolvePiModel(protocol.spec, protocol.models(server.baseUrl));
    const expected = server.requests.map((request, index) => {
      const counts = protocol.reportedUsage(request.usageSent);
      const costUsd =
        (counts.inputTokens * model.cost.input +
          counts.outputTokens * model.cost.output +
          counts.cacheReadTokens * model.cost.cacheRead +
          counts.cacheWriteTokens * model.cost.cacheWrite) /
        1_000_000;
      return { id: expect.stringMatching(new RegExp(`^run_1:model:${index + 1}:`)), provider: model.provider, model: model.id, ...counts, costUsd };
    });
    const recorded = [...ctx.usage.values()];
    expect(recorded.map(({ costUsd: _cost, ...counts }) => counts)).toEqual(expected.map(({ costUsd: _cost, ...counts }) => counts));
    recorded.forEach((record, i) => expect(record.costUsd).toBeCloseTo(expected[i]!.costUsd, 12));
    expect(recorded[0]!.costUsd).toBeGreaterThan(0);
    expect(ctx.eventsOfType("model.response").map((e) => (e.usage as Record<string, JsonValue>).outputTokens)).toEqual([56, 7]);
  });

  it("caps the reply at the models entry's maxTokens", async () => {
    server.text(["Short."]);
    const models = protocol.models(server.baseUrl);
    const capped = { [protocol.spec]: { ...models[protocol.spec], maxTokens: 321 } };
    await harness({ models: capped }).runTurn(turnInput(protocol.spec), new JournalHarnessContext("run_1", tools));
    const body = server.requests[0]!.body as { max_tokens?: number; max_completion_tokens?: number };
    expect(body.max_completion_tokens ?? body.max_tokens).toBe(321);
  });

  it(`fails with an error naming ${protocol.keyVariable} when no API key is set`, async () => {
    delete process.env[protocol.keyVariable];
    const ctx = new JournalHarnessContext("run_1", tools);

    const failure = await harness().runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_API_KEY")).toBe(true);
    expect(String((failure as Error).message)).toContain(`${protocol.keyVariable} is not set`);
    expect(server.requests).toHaveLength(0);
  });

  it("prefers a key from the host's apiKeys option over the environment", async () => {
    process.env[protocol.keyVariable] = "wrong-key-from-env";
    server.text(["Hi."]);
    const provider = protocol.spec.split("/")[0]!;

    const result = await harness({ apiKeys: { [provider]: protocol.apiKey } }).runTurn(turnInput(protocol.spec), new JournalHarnessContext("run_1", tools));

    expect(result).toEqual({ status: "completed", response: { text: "Hi." } });
  });

  it("reads the key from the env option in place of process.env", async () => {
    process.env[protocol.keyVariable] = "wrong-key-from-process-env";
    server.text(["Hi."]);

    const result = await harness({ env: { [protocol.keyVariable]: protocol.apiKey } }).runTurn(turnInput(protocol.spec), new JournalHarnessContext("run_1", tools));
    expect(result).toEqual({ status: "completed", response: { text: "Hi." } });

    delete process.env[protocol.keyVariable];
    const failure = await harness({ env: {} }).runTurn(turnInput(protocol.spec), new JournalHarnessContext("run_2", tools)).catch((e: unknown) => e);
    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_API_KEY")).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it("refuses an unknown model before any request", async () => {
    const failure = await harness().runTurn(turnInput(`${protocol.spec}-nope`), new JournalHarnessContext("run_1", tools)).catch((e: unknown) => e);

    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_UNKNOWN")).toBe(true);
    expect(String((failure as Error).message)).toContain(`${protocol.spec}-nope`);
    expect(server.requests).toHaveLength(0);
  });

  it("stops the stream when the run's signal aborts", async () => {
    const controller = new AbortController();
    server.enqueue({ kind: "stream", text: ["Once upon", " a time"], holdAfter: { events: 1, until: new Promise(() => undefined) } });
    const ctx = new JournalHarnessContext("run_1", tools, { signal: controller.signal });
    ctx.onTextDelta = () => controller.abort(new Error("run cancelled"));

    const failure = await harness().runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect((failure as Error).message).toBe("run cancelled");
    expect(ctx.deltas).toEqual(["Once upon"]);
    expect(ctx.journal.size).toBe(0);
    expect(server.requests).toHaveLength(1);
  }, 10_000);

  it("records the usage the provider reported before the run's signal aborted the call", async () => {
    const controller = new AbortController();
    server.enqueue({ kind: "stream", text: ["Once upon", " a time"], usage: { inputTokens: 5000, outputTokens: 10 }, holdAfter: { events: 1, until: new Promise(() => undefined) } });
    const ctx = new JournalHarnessContext("run_1", tools, { signal: controller.signal });
    ctx.onTextDelta = () => controller.abort(new Error("run cancelled"));

    const failure = await harness().runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect((failure as Error).message).toBe("run cancelled");
    // Anthropic reports (and bills) the prompt's tokens when the stream opens; OpenAI reports usage only at the end.
    expect([...ctx.usage.values()].map((u) => u.inputTokens)).toEqual(protocol === anthropicMessages ? [5000] : []);
  }, 10_000);

  it("answers none of a reply's remaining tool calls once the run's signal aborts", async () => {
    const controller = new AbortController();
    server.toolCalls([
      { id: "call_1", name: "get_time", argumentChunks: ['{"city":"Paris"}'] },
      { id: "call_2", name: "get_weather", argumentChunks: ['{"city":"Paris"}'] },
    ]);
    const cancelling = { ...tools, get_time: { run: () => (controller.abort(new Error("run cancelled")), "14:05") } };
    const ctx = new JournalHarnessContext("run_1", cancelling, { signal: controller.signal });

    const failure = await harness().runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect((failure as Error).message).toBe("run cancelled");
    expect(ctx.toolCalls.map((c) => c.id)).toEqual(["call_1"]);
    expect(server.requests).toHaveLength(1);
  });

  it("fails the turn when the provider's connection drops mid-answer, never taking the part received for the answer", async () => {
    server.enqueue({ kind: "stream", text: ["Once upon", " a time"], holdAfter: { events: 1, until: new Promise(() => undefined) } });
    const ctx = new JournalHarnessContext("run_1", tools);
    ctx.onTextDelta = () => void server.close();

    const outcome = await harness({ retry: { ...fastRetry, maxRetries: 0 } }).runTurn(turnInput(protocol.spec), ctx).catch((e: unknown) => e);

    expect(outcome).toBeInstanceOf(Error);
    expect(ctx.journal.size).toBe(0);
  }, 10_000);

  it("leaves no abort listener on the run's signal after a turn of many model calls", async () => {
    const modelCalls = 12;
    for (let i = 1; i < modelCalls; i += 1) server.toolCalls([{ id: `call_${i}`, name: "get_time", argumentChunks: ['{"city":"Paris"}'] }]);
    server.error(503, "Service unavailable.").text(["Done."]);
    const controller = new AbortController();
    const ctx = new JournalHarnessContext("run_1", tools, { signal: controller.signal });

    const result = await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(result).toEqual({ status: "completed", response: { text: "Done." } });
    expect(server.requests).toHaveLength(modelCalls + 1);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("ends the turn with the tool's error when a tool fails", async () => {
    server.toolCalls([
      { id: "call_1", name: "explode", argumentChunks: ["{}"] },
      { id: "call_2", name: "get_time", argumentChunks: ['{"city":"Paris"}'] },
    ]);
    const ctx = new JournalHarnessContext("run_1", tools);

    const result = await harness().runTurn(turnInput(protocol.spec), ctx);

    expect(result).toEqual({ status: "completed", response: { text: "disk full" } });
    expect(ctx.toolCalls.map((c) => c.id)).toEqual(["call_1"]);
    expect(server.requests).toHaveLength(1);
  });

  describe("pause and resume", () => {
    const pausingReply = (): void => {
      server.toolCalls([
        { id: "call_1", name: "get_weather", argumentChunks: ['{"city":"Paris"}'] },
        { id: "call_2", name: "deploy", argumentChunks: ['{"service":', '"web"}'] },
        { id: "call_3", name: "get_time", argumentChunks: ['{"city":"Paris"}'] },
      ]);
    };

    it("pauses on an approval-gated tool with a JSON continuation, then resumes without asking the model again", async () => {
      pausingReply();
      const first = new JournalHarnessContext("run_1", tools);

      const paused = await harness().runTurn(turnInput(protocol.spec), first);

      expect(paused.status).toBe("paused");
      if (paused.status !== "paused") return;
      const continuation = JSON.parse(JSON.stringify(paused.continuation));
      expect(continuation).toEqual(paused.continuation);
      expect(continuation).toMatchObject({ version: 1, harness: "pi", agentRevision: "rev_1" });
      expect(continuation.data.pendingToolCalls).toEqual([
        { id: "call_2", name: "deploy", input: { service: "web" } },
        { id: "call_3", name: "get_time", input: { city: "Paris" } },
      ]);
      expect(first.toolCalls.map((c) => c.id)).toEqual(["call_1", "call_2"]);
      expect(server.requests).toHaveLength(1);

      server.text(["Deployed web; it is 14:05."]);
      const resumed = new JournalHarnessContext("run_1", tools, { journal: first.journal, toolResults: first.toolResults });
      resumed.approved.add("call_2");

      const result = await harness().runTurn(turnInput(protocol.spec, { continuation }), resumed);

      expect(result).toEqual({ status: "completed", response: { text: "Deployed web; it is 14:05." } });
      expect(resumed.toolCalls.map((c) => c.id)).toEqual(["call_2", "call_3"]);
      expect(server.requests).toHaveLength(2);
      expect(protocol.toolResultsIn(server.requests[1]!.body).map((r) => r.id)).toEqual(["call_1", "call_2", "call_3"]);
      expect(resumed.stepsRun).toEqual(["model:2"]);
      expect(resumed.eventsOfType("model.response").map((e) => e.step)).toEqual(["model:2"]);
    });

    it("replays a journaled model call after a crash instead of sending it again", async () => {
      pausingReply();
      const first = new JournalHarnessContext("run_1", tools);
      await harness().runTurn(turnInput(protocol.spec), first);

      // The replica died before the pause was checkpointed: the turn runs again on the same journal.
      const recovered = new JournalHarnessContext("run_1", tools, { journal: first.journal, toolResults: first.toolResults });
      const again = await harness().runTurn(turnInput(protocol.spec), recovered);

      expect(again.status).toBe("paused");
      expect(server.requests).toHaveLength(1);
      expect(recovered.stepsReplayed).toEqual(["model:1"]);
      expect(recovered.eventsOfType("model.response")).toEqual([]);
      expect(recovered.eventsOfType("tool.replayed").map((e) => e.id)).toEqual(["call_1"]);
      expect(recovered.deltas).toEqual([]);
    });

    it("still refuses a malformed tool call that was waiting behind a paused one when the run resumes", async () => {
      server.toolCalls([
        { id: "call_1", name: "deploy", argumentChunks: ['{"service":"web"}'] },
        { id: "call_2", name: "get_time", argumentChunks: ["Paris"] },
      ]);
      const first = new JournalHarnessContext("run_1", tools);
      const paused = await harness().runTurn(turnInput(protocol.spec), first);
      if (paused.status !== "paused") throw new Error("expected a pause");

      server.text(["Deployed."]);
      const resumed = new JournalHarnessContext("run_1", tools, { journal: first.journal, toolResults: first.toolResults });
      resumed.approved.add("call_1");
      await harness().runTurn(turnInput(protocol.spec, { continuation: JSON.parse(JSON.stringify(paused.continuation)) }), resumed);

      expect(resumed.toolCalls.map((c) => c.id)).toEqual(["call_1"]);
      const results = protocol.toolResultsIn(server.requests[1]!.body);
      expect(results.find((r) => r.id === "call_2")?.content).toContain("are not valid JSON");
    });

    it("shows the model a denial as the tool's result", async () => {
      pausingReply();
      const first = new JournalHarnessContext("run_1", tools);
      const paused = await harness().runTurn(turnInput(protocol.spec), first);
      if (paused.status !== "paused") throw new Error("expected a pause");

      server.text(["Understood, not deploying."]);
      const resumed = new JournalHarnessContext("run_1", tools, { journal: first.journal, toolResults: first.toolResults });
      resumed.denied.add("call_2");
      const result = await harness().runTurn(turnInput(protocol.spec, { continuation: paused.continuation }), resumed);

      expect(result).toEqual({ status: "completed", response: { text: "Understood, not deploying." } });
      const results = protocol.toolResultsIn(server.requests[1]!.body);
      expect(results.find((r) => r.id === "call_2")?.content).toContain("The user denied this tool call.");
    });
  });
});

describe("pi harness against OpenAI's Responses API (the catalog's openai/* models)", () => {
  const spec = "openai/gpt-5.4-mini";
  const apiKey = "sk-test-responses";

  const start = async () => {
    const server = await startOpenAIResponsesServer(apiKey);
    onTestFinished(() => server.close());
    // Only the endpoint is overridden: the catalog entry's api stays "openai-responses".
    const harness = piAgentHarness({ models: { [spec]: { baseUrl: server.baseUrl } }, apiKeys: { openai: apiKey }, retry: { ...fastRetry, maxRetries: 1 } });
    expect(resolvePiModel(spec, { [spec]: { baseUrl: server.baseUrl } }).api).toBe("openai-responses");
    return { server, harness };
  };

  it("answers with the text of a stream that reached response.completed", async () => {
    const { server, harness } = await start();
    server.text(["Half an ans", "wer, then the rest."]);

    const result = await harness.runTurn(turnInput(spec), new JournalHarnessContext("run_1", tools));

    expect(result).toEqual({ status: "completed", response: { text: "Half an answer, then the rest." } });
  });

  it("asks again when the stream ends before response.completed, and fails naming it when every attempt does", async () => {
    const { server, harness } = await start();
    server.enqueue({ kind: "stream", text: ["Half an ans", "wer."], breakAfter: { events: 1, with: "end" } }).text(["A whole answer."]);
    const ctx = new JournalHarnessContext("run_1", tools);

    expect(await harness.runTurn(turnInput(spec), ctx)).toEqual({ status: "completed", response: { text: "A whole answer." } });
    expect(server.requests).toHaveLength(2);

    for (let i = 0; i < 2; i += 1) server.enqueue({ kind: "stream", text: ["Half an ans", "wer."], breakAfter: { events: 1, with: "end" } });
    const failure = await harness.runTurn(turnInput(spec), new JournalHarnessContext("run_2", tools)).catch((e: unknown) => e);

    expect(isAssemblyLineError(failure, "AL_ERR_MODEL_PROVIDER")).toBe(true);
    expect(String((failure as Error).message)).toContain("the stream ended before its end (no response.completed event)");
    expect(server.requests).toHaveLength(4);
  });
});
