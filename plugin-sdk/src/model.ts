import type { JsonSchema, JsonValue } from "./json.js";

/** A tool call as a model requested it. */
export interface ModelToolCall {
  id: string;
  name: string;
  input: JsonValue;
}

/** One message of the model transcript, engine-neutral. */
export type ModelMessage =
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: ModelToolCall[] }
  | { role: "tool"; toolCallId: string; name: string; content: JsonValue; isError?: boolean };

/** A tool as the model sees it. */
export interface ModelToolSpec {
  name: string;
  description: string;
  inputSchema: JsonSchema;
}
