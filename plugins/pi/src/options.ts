import type { AnthropicMessagesCompat, Api, OpenAICompletionsCompat, OpenAIResponsesCompat } from "@mariozechner/pi-ai";

/**
 * One entry of `piAgentHarness({ models })`, keyed by its `provider/model` spec.
 *
 * For a spec pi-ai's catalog already knows (`anthropic/claude-haiku-4-5`), every
 * field is optional and overrides the catalog value (e.g. `baseUrl` for a proxy).
 * For a new spec (`local/llama3`), `api` and `baseUrl` are required:
 *
 * ```ts
 * piAgentHarness({
 *   models: {
 *     "local/llama3": {
 *       api: "openai-completions",
 *       baseUrl: "http://127.0.0.1:11434/v1",
 *       id: "llama3.1:8b",
 *       apiKeyEnv: false,
 *     },
 *   },
 * });
 * ```
 */
export interface PiModelEntry {
  /** pi-ai wire API: "openai-completions" (any OpenAI-compatible server), "openai-responses", "anthropic-messages", ... */
  api?: Api;
  /** Endpoint root as the provider SDK expects it (`http://127.0.0.1:11434/v1` for Ollama). */
  baseUrl?: string;
  /** Model id sent to the provider. Default: the spec after the first `/`. */
  id?: string;
  /** Provider name used for API-key lookup and usage records. Default: the spec before the first `/`. */
  provider?: string;
  /**
   * Model name. pi-ai matches it as well as `id` for features of amazon-bedrock
   * models: a name with "claude" marks an application inference profile (whose
   * ARN names no model) as Claude, for prompt caching and thinking. Default:
   * the catalog's name, or the spec for a new model.
   */
  name?: string;
  /** Whether the model supports reasoning/thinking. Default false. */
  reasoning?: boolean;
  /** Default ["text"]. */
  input?: ("text" | "image")[];
  /** USD per million tokens; feeds `costUsd` of usage records. Missing prices count as 0. */
  cost?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
  /** Default 16384. */
  maxTokens?: number;
  /** Extra HTTP headers sent with every request. */
  headers?: Record<string, string>;
  /** Wire-format quirks of OpenAI- or Anthropic-compatible servers (see pi-ai's README). */
  compat?: OpenAICompletionsCompat | OpenAIResponsesCompat | AnthropicMessagesCompat;
  /**
   * Environment variable holding this model's API key, or `false` for a server
   * that needs none (a local Ollama or vLLM). Default: the provider's usual
   * variable as pi-ai reads it (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...).
   */
  apiKeyEnv?: string | false;
}

/** `provider/model` -> entry. */
export type PiModelCatalog = Record<string, PiModelEntry>;

/**
 * How a failed model call is retried. Retried: 429 and 5xx answers, connections
 * that fail or drop, and streams the provider breaks off after accepting the
 * request (Anthropic's in-stream `overloaded_error` or `api_error`, OpenAI's
 * in-stream server error, a stream that ends before its end marker), also after part of the reply was streamed (the host
 * is told first, HarnessContext.textRestart). Not retried: other 4xx answers, a
 * refusal or content filter.
 */
export interface PiRetryOptions {
  /** Retries after the first attempt. Default 3. */
  maxRetries?: number;
  /** First backoff; it doubles on each retry and is jittered. Default 500 ms. */
  initialDelayMs?: number;
  /** Ceiling on any single wait, including a server's `retry-after`. Default 30000 ms. */
  maxDelayMs?: number;
}

/**
 * Checked against the package's config.schema.json when the harness is made, so
 * an unknown key at any level is refused; test/harness-options.test.ts keeps the
 * schema and these types listing the same keys.
 */
export interface PiHarnessOptions {
  /** Adds or overrides pi-ai catalog entries. Host configuration, never read from the agent folder. */
  models?: PiModelCatalog;
  /** API keys by provider (`{ openai: "sk-..." }`); they take precedence over environment variables. */
  apiKeys?: Record<string, string>;
  /**
   * The environment API keys are read from (each provider's variable, an entry's
   * `apiKeyEnv`), in place of process.env; the Node host passes its own `env`.
   * Default process.env.
   */
  env?: Record<string, string | undefined>;
  retry?: PiRetryOptions;
}
