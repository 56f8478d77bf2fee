import type { HarnessTurnInput, ModelToolSpec } from "@assemblyline-agents/core";
import type { PiModelCatalog } from "../../src/index.js";
import { startAnthropicMessagesServer, startOpenAIChatServer, type ScriptedModelServer } from "../../src/testkit/servers/index.js";

/** One provider wire protocol the harness is tested against, with how to read its requests. */
export interface ProtocolCase {
  name: string;
  spec: string;
  /** The variable pi-ai reads the key from. */
  keyVariable: string;
  /** Other variables pi-ai also reads for this provider; cleared so the machine's own never leak in. */
  otherKeyVariables: string[];
  apiKey: string;
  start(): Promise<ScriptedModelServer & { baseUrl: string }>;
  models(baseUrl: string): PiModelCatalog;
  /** A `retry-after` value asking for about a second. */
  retryAfterOneSecond(): string;
  systemPromptIn(body: any): string;
  toolNamesIn(body: any): string[];
  toolResultsIn(body: any): { id: string; content: string }[];
  /** Token counts from the usage object the server sent, in the harness's terms. */
  reportedUsage(usageSent: any): { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number };
}

export const openAIChat: ProtocolCase = {
  name: "OpenAI chat completions",
  spec: "openai/gpt-4o-mini",
  keyVariable: "OPENAI_API_KEY",
  otherKeyVariables: [],
  apiKey: "sk-test-openai",
  start: () => startOpenAIChatServer({ apiKey: "sk-test-openai" }),
  // The catalog's OpenAI models speak the Responses API; this entry points one at a chat-completions server.
  models: (baseUrl) => ({ "openai/gpt-4o-mini": { api: "openai-completions", baseUrl } }),
  retryAfterOneSecond: () => "1",
  systemPromptIn: (body) => body.messages.find((m: any) => m.role === "system" || m.role === "developer")?.content ?? "",
  toolNamesIn: (body) => (body.tools ?? []).map((t: any) => t.function.name),
  toolResultsIn: (body) =>
    body.messages.filter((m: any) => m.role === "tool").map((m: any) => ({ id: m.tool_call_id, content: textContent(m.content) })),
  reportedUsage: (sent) => ({
    inputTokens: sent.prompt_tokens - sent.prompt_tokens_details.cached_tokens,
    outputTokens: sent.completion_tokens,
    cacheReadTokens: sent.prompt_tokens_details.cached_tokens,
    cacheWriteTokens: 0,
  }),
};

export const anthropicMessages: ProtocolCase = {
  name: "Anthropic messages",
  spec: "anthropic/claude-haiku-4-5",
  keyVariable: "ANTHROPIC_API_KEY",
  otherKeyVariables: ["ANTHROPIC_OAUTH_TOKEN"],
  apiKey: "sk-ant-test",
  start: () => startAnthropicMessagesServer({ apiKey: "sk-ant-test" }),
  // A catalog model with only its endpoint overridden: prices and limits stay pi-ai's.
  models: (baseUrl) => ({ "anthropic/claude-haiku-4-5": { baseUrl } }),
  // The HTTP-date form; it has one-second resolution, so ask for two and expect at least one.
  retryAfterOneSecond: () => new Date(Date.now() + 2000).toUTCString(),
  systemPromptIn: (body) => (typeof body.system === "string" ? body.system : (body.system ?? []).map((b: any) => b.text).join("")),
  toolNamesIn: (body) => (body.tools ?? []).map((t: any) => t.name),
  toolResultsIn: (body) =>
    body.messages.flatMap((m: any) =>
      Array.isArray(m.content)
        ? m.content.filter((b: any) => b.type === "tool_result").map((b: any) => ({ id: b.tool_use_id, content: textContent(b.content) }))
        : [],
    ),
  reportedUsage: (sent) => ({
    inputTokens: sent.input_tokens,
    outputTokens: sent.output_tokens,
    cacheReadTokens: sent.cache_read_input_tokens,
    cacheWriteTokens: sent.cache_creation_input_tokens,
  }),
};

function textContent(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((b: any) => b.text ?? "").join("");
  return JSON.stringify(content);
}

export const weatherTool: ModelToolSpec = {
  name: "get_weather",
  description: "Current weather for a city.",
  inputSchema: { type: "object", properties: { city: { type: "string" }, days: { type: "array", items: { type: "integer" } } }, required: ["city"] },
};

export const timeTool: ModelToolSpec = {
  name: "get_time",
  description: "Local time in a city.",
  inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

export const deployTool: ModelToolSpec = {
  name: "deploy",
  description: "Deploy the service. Needs a human's approval.",
  inputSchema: { type: "object", properties: { service: { type: "string" } }, required: ["service"] },
};

export function turnInput(spec: string, overrides: Partial<HarnessTurnInput> = {}): HarnessTurnInput {
  return {
    runId: "run_1",
    agentRevision: "rev_1",
    modelSpec: spec,
    context: {
      instructions: "You are a weather agent. Use the tools.",
      messages: [{ role: "user", content: "What's the weather and time in Paris?" }],
      tools: [weatherTool, timeTool, deployTool],
    },
    ...overrides,
  };
}
