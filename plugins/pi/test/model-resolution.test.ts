import { isAssemblyLineError } from "@assemblyline-agents/core";
import { afterEach, describe, expect, it } from "vitest";
import { apiKeyVariable, NO_API_KEY, piAgentHarness, resolvePiApiKey, resolvePiModel } from "../src/index.js";

function errorOf(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error("expected a throw");
}

describe("resolvePiModel", () => {
  it("returns pi-ai's catalog entry for a known provider/model", () => {
    const model = resolvePiModel("anthropic/claude-haiku-4-5");
    expect(model).toMatchObject({ id: "claude-haiku-4-5", provider: "anthropic", api: "anthropic-messages" });
    expect(model.cost.output).toBeGreaterThan(0);
  });

  it("overrides only the fields a host entry sets", () => {
    const catalog = resolvePiModel("anthropic/claude-haiku-4-5");
    const model = resolvePiModel("anthropic/claude-haiku-4-5", {
      "anthropic/claude-haiku-4-5": { baseUrl: "http://127.0.0.1:9/", cost: { input: 7 }, id: undefined },
    });
    expect(model.baseUrl).toBe("http://127.0.0.1:9/");
    expect(model.id).toBe("claude-haiku-4-5");
    expect(model.cost).toEqual({ ...catalog.cost, input: 7 });
  });

  it("builds a new model for an OpenAI-compatible local server", () => {
    const model = resolvePiModel("local/llama3", {
      "local/llama3": { api: "openai-completions", baseUrl: "http://127.0.0.1:11434/v1", id: "llama3.1:8b", apiKeyEnv: false },
    });
    expect(model).toEqual({
      id: "llama3.1:8b",
      name: "local/llama3",
      api: "openai-completions",
      provider: "local",
      baseUrl: "http://127.0.0.1:11434/v1",
      reasoning: false,
      input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 128_000,
      maxTokens: 16_384,
    });
  });

  it("keeps slashes of the model id after the provider", () => {
    expect(resolvePiModel("openrouter/x/y", { "openrouter/x/y": { api: "openai-completions", baseUrl: "http://h/v1" } }).id).toBe("x/y");
  });

  it("names the model, close catalog ids and the fix for an unknown model", () => {
    const error = errorOf(() => resolvePiModel("anthropic/claude-haiku-9"));
    expect(isAssemblyLineError(error, "AL_ERR_MODEL_UNKNOWN")).toBe(true);
    expect(error.message).toContain('Model "anthropic/claude-haiku-9"');
    expect(error.message).toContain("anthropic/claude-haiku-4-5");
    expect(error.message).toContain("piAgentHarness({ models:");
  });

  it("names pi-ai's providers for an unknown provider", () => {
    const error = errorOf(() => resolvePiModel("nosuch/model"));
    expect(isAssemblyLineError(error, "AL_ERR_MODEL_UNKNOWN")).toBe(true);
    expect(error.message).toMatch(/no provider "nosuch"[\s\S]*openai/);
  });

  it("refuses a spec without a provider", () => {
    expect(errorOf(() => resolvePiModel("gpt-4o")).message).toContain("is not of the form provider/model");
  });

  it("asks a new entry for the api and baseUrl it lacks", () => {
    const error = errorOf(() => resolvePiModel("local/llama3", { "local/llama3": { api: "openai-completions" } }));
    expect(isAssemblyLineError(error, "AL_ERR_MODEL_UNKNOWN")).toBe(true);
    expect(error.message).toContain('models["local/llama3"] is not in pi-ai\'s catalog, so it must set baseUrl');
  });

  it("refuses an api pi-ai does not implement", () => {
    const error = errorOf(() => resolvePiModel("local/x", { "local/x": { api: "smoke-signals", baseUrl: "http://h" } }));
    expect(error.message).toContain('uses api "smoke-signals"');
    expect(error.message).toContain("openai-completions");
  });

  it("is checked for every declared model when the harness is made", () => {
    expect(() => piAgentHarness({ models: { "local/llama3": { api: "openai-completions" } } })).toThrow(/must set baseUrl/);
    expect(() => piAgentHarness({ retry: { maxRetries: -1 } })).toThrow(/options.retry.maxRetries must be >= 0/);
  });
});

describe("resolvePiApiKey", () => {
  const saved = Object.fromEntries(
    ["OPENAI_API_KEY", "LOCAL_API_KEY", "MY_LLM_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"].map((name) => [name, process.env[name]]),
  );
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  const local = { "local/llama3": { api: "openai-completions", baseUrl: "http://127.0.0.1:11434/v1" } } as const;

  it("reads the provider's usual variable", () => {
    process.env.OPENAI_API_KEY = "sk-env";
    expect(resolvePiApiKey("openai/gpt-4o-mini", resolvePiModel("openai/gpt-4o-mini"), {})).toBe("sk-env");
  });

  it("reads the declared ANTHROPIC_API_KEY before ANTHROPIC_OAUTH_TOKEN, which pi-ai would prefer", () => {
    const spec = "anthropic/claude-haiku-4-5";
    process.env.ANTHROPIC_API_KEY = "sk-ant-api-declared";
    process.env.ANTHROPIC_OAUTH_TOKEN = "sk-ant-oat01-other";
    expect(resolvePiApiKey(spec, resolvePiModel(spec), {})).toBe("sk-ant-api-declared");
    // Unset, the declared variable leaves the key to the other credentials pi-ai knows.
    delete process.env.ANTHROPIC_API_KEY;
    expect(resolvePiApiKey(spec, resolvePiModel(spec), {})).toBe("sk-ant-oat01-other");
  });

  it("names <PROVIDER>_API_KEY for a custom provider, and how to declare a keyless server", () => {
    delete process.env.LOCAL_API_KEY;
    const error = errorOf(() => resolvePiApiKey("local/llama3", resolvePiModel("local/llama3", local), { models: local }));
    expect(isAssemblyLineError(error, "AL_ERR_MODEL_API_KEY")).toBe(true);
    expect(error.message).toContain("No API key for local/llama3: LOCAL_API_KEY is not set.");
    expect(error.message).toContain('models["local/llama3"].apiKeyEnv = false');
  });

  it("reads an entry's own variable, or none for a keyless server", () => {
    process.env.MY_LLM_KEY = "from-my-var";
    const own = { "local/llama3": { ...local["local/llama3"], apiKeyEnv: "MY_LLM_KEY" } };
    expect(resolvePiApiKey("local/llama3", resolvePiModel("local/llama3", own), { models: own })).toBe("from-my-var");
    const keyless = { "local/llama3": { ...local["local/llama3"], apiKeyEnv: false as const } };
    expect(resolvePiApiKey("local/llama3", resolvePiModel("local/llama3", keyless), { models: keyless })).toBe(NO_API_KEY);
  });

  it("names variables that do not follow the convention as pi-ai reads them", () => {
    expect(apiKeyVariable("google")).toBe("GEMINI_API_KEY");
    expect(apiKeyVariable("anthropic")).toBe("ANTHROPIC_API_KEY");
    expect(apiKeyVariable("xiaomi-token-plan-cn")).toBe("XIAOMI_TOKEN_PLAN_CN_API_KEY");
  });
});
