import type { JsonValue, ModelMessage, ModelToolCall, ModelToolSpec } from "@assemblyline-agents/core";
import type { Api, AssistantMessage, Message, Model, Tool, ToolResultMessage } from "@mariozechner/pi-ai";

/*
 * Converted history carries timestamp 0: the runtime's messages have no time of
 * their own, providers never see it, and a fixed value keeps conversion pure.
 */
const HISTORY_TIMESTAMP = 0;

const NO_USAGE: AssistantMessage["usage"] = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** The runtime's engine-neutral transcript as pi-ai messages for `model`. */
export function toPiMessages(messages: ModelMessage[], model: Model<Api>): Message[] {
  return messages.map((message): Message => {
    switch (message.role) {
      case "user":
        return { role: "user", content: message.content, timestamp: HISTORY_TIMESTAMP };
      case "assistant":
        return toPiAssistant(message, model);
      case "tool":
        return toolResultMessage({ id: message.toolCallId, name: message.name }, message.content, message.isError ?? false, HISTORY_TIMESTAMP);
    }
  });
}

/*
 * Prior assistant turns are attributed to the current model so pi-ai replays them
 * as its own (it rewrites messages it believes another provider produced).
 */
function toPiAssistant(message: Extract<ModelMessage, { role: "assistant" }>, model: Model<Api>): AssistantMessage {
  const calls = message.toolCalls ?? [];
  return {
    role: "assistant",
    content: [
      ...(message.content ? [{ type: "text" as const, text: message.content }] : []),
      ...calls.map((call) => ({ type: "toolCall" as const, id: call.id, name: call.name, arguments: asArguments(call.input) })),
    ],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: NO_USAGE,
    stopReason: calls.length > 0 ? "toolUse" : "stop",
    timestamp: HISTORY_TIMESTAMP,
  };
}

/** Tools as pi-ai declares them; pi-ai sends `parameters` to the provider as JSON Schema. */
export function toPiTools(tools: ModelToolSpec[]): Tool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    parameters: tool.inputSchema as unknown as Tool["parameters"],
  }));
}

/** What the model sees of a tool's output: strings as they are, anything else as JSON. */
export function toolResultMessage(
  call: { id: string; name: string },
  output: JsonValue,
  isError: boolean,
  timestamp: number = Date.now(),
): ToolResultMessage {
  const text = typeof output === "string" ? output : JSON.stringify(output);
  return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text }], isError, timestamp };
}

/** The tool calls of a model reply, in the order the model made them. */
export function toolCallsOf(message: AssistantMessage): ModelToolCall[] {
  return message.content.flatMap((block) =>
    block.type === "toolCall" ? [{ id: block.id, name: block.name, input: block.arguments as JsonValue }] : [],
  );
}

/** The visible text of a model reply (thinking excluded). */
export function textOf(message: AssistantMessage): string {
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

function asArguments(input: JsonValue): Record<string, unknown> {
  return input !== null && typeof input === "object" && !Array.isArray(input) ? input : {};
}
