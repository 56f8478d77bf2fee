import type { JsonValue, ModelMessage } from "@assemblyline-agents/core";
import type { ResponseItem } from "./continuation.js";

export function userItem(text: string): ResponseItem {
  return { type: "message", role: "user", content: [{ type: "input_text", text }] };
}

export function assistantItem(text: string): ResponseItem {
  return { type: "message", role: "assistant", content: [{ type: "output_text", text }] };
}

export function functionCallItem(callId: string, name: string, args: JsonValue): ResponseItem {
  return { type: "function_call", call_id: callId, name, arguments: JSON.stringify(args ?? {}) };
}

export function functionOutputItem(callId: string, output: string): ResponseItem {
  return { type: "function_call_output", call_id: callId, output };
}

/** The runtime's engine-neutral messages (recent history and this turn's input) as Responses items. */
export function toResponseItems(messages: ModelMessage[]): ResponseItem[] {
  return messages.flatMap((message): ResponseItem[] => {
    if (message.role === "user") return [userItem(message.content)];
    if (message.role === "assistant") {
      return [...(message.content ? [assistantItem(message.content)] : []), ...(message.toolCalls ?? []).map((call) => functionCallItem(call.id, call.name, call.input))];
    }
    return [functionOutputItem(message.toolCallId, toolOutputText(message.content))];
  });
}

/** What the model sees of a tool result: strings as they are, anything else as JSON. */
export function toolOutputText(output: JsonValue): string {
  return typeof output === "string" ? output : JSON.stringify(output);
}
