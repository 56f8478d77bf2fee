import type { AssistantMessage, Message } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { withOwnToolCallIds } from "../src/tool-call-ids.js";

const reply = (...ids: string[]): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text: "On it." }, ...ids.map((id) => ({ type: "toolCall" as const, id, name: "get_time", arguments: { city: "Paris" } }))],
  api: "openai-completions",
  provider: "local",
  model: "llama3",
  usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
  stopReason: "toolUse",
  timestamp: 0,
});
const idsOf = (message: AssistantMessage) => message.content.flatMap((block) => (block.type === "toolCall" ? [block.id] : []));
const toolResult = (toolCallId: string): Message => ({ role: "toolResult", toolCallId, toolName: "get_time", content: [{ type: "text", text: "14:05" }], isError: false, timestamp: 0 });

describe("tool call ids of a model reply", () => {
  it("keeps the provider's ids when the run has not used them, and the reply itself", () => {
    const message = reply("call_0_0", "toolu_01");
    expect(withOwnToolCallIds(message, [reply("call_a"), toolResult("call_a")], 2)).toBe(message);
  });

  it("gives a call without an id, or under an id the transcript holds, one from its model call and position", () => {
    const earlier = [{ role: "user" as const, content: "Time?", timestamp: 0 }, reply("call_0"), toolResult("call_0")];
    expect(idsOf(withOwnToolCallIds(reply("call_0", "", "call_1"), earlier, 2))).toEqual(["model2_call0", "model2_call1", "call_1"]);
  });

  it("gives the second of two calls of one reply under the same id an id of its own", () => {
    expect(idsOf(withOwnToolCallIds(reply("call_0", "call_0"), [], 1))).toEqual(["call_0", "model1_call1"]);
  });

  it("never gives an id the provider sent, even when it has the replacement's shape", () => {
    expect(idsOf(withOwnToolCallIds(reply("model3_call1", ""), [reply("model3_call0")], 3))).toEqual(["model3_call1", "model3_call1_2"]);
  });
});
