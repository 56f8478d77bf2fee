import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { piAgentHarness, resolvePiModel, type PiHarnessOptions, type PiModelEntry, type PiRetryOptions } from "../src/index.js";

const refused = expect.objectContaining({ code: "AL_ERR_PLUGIN_OPTIONS" });
const local = { api: "openai-completions", baseUrl: "http://127.0.0.1:11434/v1", apiKeyEnv: false } as const;

describe("piAgentHarness's options, checked against config.schema.json", () => {
  it("refuses a misspelt retry option, naming it, instead of retrying with the default", () => {
    const refusal = () => piAgentHarness({ retry: { maxRetry: 0 } } as never);
    expect(refusal).toThrow(refused);
    expect(refusal).toThrow(/piAgentHarness: options\.retry has an unknown key "maxRetry"/);
  });

  it("refuses misspelt top-level options, naming each, and lists the real ones", () => {
    const refusal = () => piAgentHarness({ modles: { "local/llama3": local }, apikeys: { openai: "sk-test" } } as never);
    expect(refusal).toThrow(refused);
    expect(refusal).toThrow(/"modles" is not an option; "apikeys" is not an option/);
    expect(refusal).toThrow(/fix: .*\(models, apiKeys, env, retry\)/);
  });

  it("refuses baseURL in a models entry rather than sending the key to the provider's default endpoint", () => {
    const refusal = () => piAgentHarness({ models: { "openai/gpt-5.4-mini": { baseURL: "http://proxy/v1" } } } as never);
    expect(refusal).toThrow(refused);
    expect(refusal).toThrow(/options\.models\.openai\S*gpt-5\.4-mini has an unknown key "baseURL"/);
    expect(refusal).toThrow(/baseUrl, not baseURL/);
  });

  it("refuses contextWindow by name as not supported yet, rather than accepting a size it would never act on", () => {
    const refusal = () => piAgentHarness({ models: { "local/tiny": { ...local, contextWindow: 2048 } } } as never);
    expect(refusal).toThrow(expect.objectContaining({ code: "AL_ERR_PLUGIN_OPTIONS", details: { spec: "local/tiny", option: "contextWindow" } }));
    expect(refusal).toThrow(/piAgentHarness: models\["local\/tiny"\]\.contextWindow is not supported yet: the engine neither trims nor refuses a context/);
  });

  it("refuses a retry count that is not a whole number", () => {
    const refusal = () => piAgentHarness({ retry: { maxRetries: 1.5 } });
    expect(refusal).toThrow(refused);
    expect(refusal).toThrow(/options\.retry\.maxRetries must be integer/);
  });

  it("refuses values of the wrong type at every level", () => {
    expect(() => piAgentHarness({ retry: { maxRetries: -1 } })).toThrow(/options\.retry\.maxRetries must be >= 0/);
    expect(() => piAgentHarness({ retry: { maxRetries: Number.POSITIVE_INFINITY } })).toThrow(/options\.retry\.maxRetries must be <=/);
    expect(() => piAgentHarness({ retry: { maxDelayMs: Number.POSITIVE_INFINITY } })).toThrow(/options\.retry\.maxDelayMs must be <=/);
    expect(() => piAgentHarness({ retry: { initialDelayMs: Number.NaN } })).toThrow(/options\.retry\.initialDelayMs must be/);
    expect(() => piAgentHarness({ retry: { initialDelayMs: "500" } } as never)).toThrow(/options\.retry\.initialDelayMs must be number/);
    expect(() => piAgentHarness({ apiKeys: { openai: 42 } } as never)).toThrow(/options\.apiKeys\.openai must be string/);
    expect(() => piAgentHarness({ models: { "local/llama3": { ...local, cost: { inptu: 1 } } } } as never)).toThrow(/llama3\.cost has an unknown key "inptu"/);
    expect(() => piAgentHarness({ models: { "local/llama3": { ...local, compat: { supportsStor: false } } } } as never)).toThrow(/compat has an unknown key "supportsStor"/);
    expect(() => piAgentHarness({ models: { "local/llama3": { ...local, apiKeyEnv: true } } } as never)).toThrow(refused);
    expect(() => piAgentHarness({ models: { "local/llama3": { ...local, input: ["audio"] } } } as never)).toThrow(/llama3\.input\.0 must be equal to one of the allowed values/);
  });

  it("refuses a price or a maxTokens that is not a finite number, naming it, instead of pricing calls no usage record can hold", () => {
    for (const field of ["input", "output", "cacheRead", "cacheWrite"]) {
      for (const price of [Number.POSITIVE_INFINITY, Number.NaN]) {
        const refusal = () => piAgentHarness({ models: { "local/llama3": { ...local, cost: { [field]: price } } } });
        expect(refusal).toThrow(refused);
        expect(refusal).toThrow(expect.objectContaining({ details: { spec: "local/llama3", option: `cost.${field}` } }));
        expect(refusal).toThrow(`models["local/llama3"].cost.${field} is ${price}; it must be a finite number of USD per million tokens`);
      }
    }
    const unbounded = () => piAgentHarness({ models: { "local/llama3": { ...local, maxTokens: Number.POSITIVE_INFINITY } } });
    expect(unbounded).toThrow(refused);
    expect(unbounded).toThrow(/models\["local\/llama3"\]\.maxTokens is Infinity; it must be a finite number/);
  });

  it("accepts every documented option, and none", () => {
    const options: PiHarnessOptions = {
      models: {
        "openai/gpt-5.4-mini": { baseUrl: "http://proxy/v1", headers: { "x-team": "agents" }, cost: { input: 0.5 }, id: undefined },
        "local/llama3": {
          ...local,
          id: "llama3.1:8b",
          provider: "ollama",
          name: "Llama 3.1 8B",
          reasoning: true,
          input: ["text", "image"],
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
          maxTokens: 8192,
          headers: { "x-trace": "1" },
          compat: {
            supportsStore: false,
            supportsDeveloperRole: false,
            supportsReasoningEffort: false,
            supportsUsageInStreaming: true,
            maxTokensField: "max_tokens",
            requiresToolResultName: false,
            requiresAssistantAfterToolResult: false,
            requiresThinkingAsText: true,
            requiresReasoningContentOnAssistantMessages: false,
            thinkingFormat: "qwen",
            openRouterRouting: { order: ["anthropic"], allow_fallbacks: false },
            vercelGatewayRouting: { only: ["bedrock"], order: ["anthropic"] },
            zaiToolStream: false,
            supportsStrictMode: true,
            cacheControlFormat: "anthropic",
            sendSessionAffinityHeaders: false,
            supportsLongCacheRetention: true,
          },
        },
        "anthropic/claude-haiku-4-5": { baseUrl: "http://127.0.0.1:9/", compat: { supportsEagerToolInputStreaming: false }, apiKeyEnv: "MY_ANTHROPIC_KEY" },
        "openai/gpt-4o-mini": { api: "openai-responses", compat: { sendSessionIdHeader: false } },
      },
      apiKeys: { openai: "sk-test", anthropic: "sk-ant-test" },
      retry: { maxRetries: 0, initialDelayMs: 5, maxDelayMs: 50.5 },
    };
    expect(piAgentHarness(options).name).toBe("pi");
    expect(piAgentHarness({ retry: { maxRetries: undefined } }).name).toBe("pi");
    expect(piAgentHarness({ models: undefined, apiKeys: undefined }).name).toBe("pi");
    expect(piAgentHarness({}).name).toBe("pi");
    expect(piAgentHarness().name).toBe("pi");
  });

  it("accepts the catalog the Node host builds from --model and --base-url", () => {
    // plugins/node's catalogFor(): a new spec gets an api and no key; a catalog spec only the baseUrl.
    expect(piAgentHarness({ models: { "local/llama3": { baseUrl: "http://127.0.0.1:11434/v1", api: "openai-completions", apiKeyEnv: false } } }).name).toBe("pi");
    expect(piAgentHarness({ models: { "openai/gpt-4o-mini": { baseUrl: "http://127.0.0.1:8080/v1" } } }).name).toBe("pi");
  });

  it("still leaves model specs and apis to pi-ai's catalog, with their own error", () => {
    expect(() => piAgentHarness({ models: { "nowhere/unknown-model": { baseUrl: "http://127.0.0.1:9/v1", api: "not-an-api" } } })).toThrow(
      expect.objectContaining({ code: "AL_ERR_MODEL_UNKNOWN" }),
    );
  });

  it("lists in its schema exactly the options the types declare, each models field one of pi-ai's Model but apiKeyEnv", () => {
    const schema = JSON.parse(readFileSync(new URL("../config.schema.json", import.meta.url), "utf8")) as {
      properties: { retry: { properties: Record<string, unknown> } } & Record<string, unknown>;
      definitions: { modelEntry: { properties: Record<string, unknown> } };
    };
    // Record<keyof ..., 1>: adding an option to the types without listing it here fails to compile.
    const harnessOptions: Record<keyof PiHarnessOptions, 1> = { models: 1, apiKeys: 1, env: 1, retry: 1 };
    const retryOptions: Record<keyof PiRetryOptions, 1> = { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 1 };
    const entryFields: Record<keyof PiModelEntry, 1> = {
      api: 1, baseUrl: 1, id: 1, provider: 1, name: 1, reasoning: 1, input: 1, cost: 1, maxTokens: 1, headers: 1, compat: 1, apiKeyEnv: 1,
    };
    expect(Object.keys(schema.properties).sort()).toEqual(Object.keys(harnessOptions).sort());
    expect(Object.keys(schema.properties.retry.properties).sort()).toEqual(Object.keys(retryOptions).sort());
    expect(Object.keys(schema.definitions.modelEntry.properties).sort()).toEqual(Object.keys(entryFields).sort());
    const model = resolvePiModel("local/llama3", { "local/llama3": local });
    const modelFields = [...Object.keys(model), "headers", "compat"];
    expect(Object.keys(entryFields).filter((field) => field !== "apiKeyEnv" && !modelFields.includes(field))).toEqual([]);
  });
});
