import type { AssistantMessage, Message } from "@mariozechner/pi-ai";

/**
 * The reply with an id of its own on every tool call. The runtime keys a run's
 * tool calls by id: a call under an id used before would get the earlier call's
 * result without running, or fail the run when its input differs. Providers do
 * not promise that: OpenAI-compatible servers may send no id (pi-ai reads it as
 * "") or count from the same `call_0` in every reply. A call keeps the
 * provider's id when it has one that the transcript (`earlier`) and the calls
 * before it in the reply do not hold yet; any other is given
 * `model<modelCall>_call<position>` (its position among the reply's tool calls,
 * from 0). Made inside the journaled model call, so the stored reply, the tool
 * results and a replay all carry the same ids.
 */
export function withOwnToolCallIds(message: AssistantMessage, earlier: readonly Message[], modelCall: number): AssistantMessage {
  const taken = toolCallIdsOf(earlier);
  let position = 0;
  let renamed = false;
  const content = message.content.map((block) => {
    if (block.type !== "toolCall") return block;
    const id = block.id !== "" && !taken.has(block.id) ? block.id : replacementId(modelCall, position, taken);
    position += 1;
    taken.add(id);
    if (id === block.id) return block;
    renamed = true;
    return { ...block, id };
  });
  return renamed ? { ...message, content } : message;
}

function toolCallIdsOf(messages: readonly Message[]): Set<string> {
  const ids = new Set<string>();
  for (const message of messages) {
    if (message.role === "toolResult") ids.add(message.toolCallId);
    if (message.role === "assistant") for (const block of message.content) if (block.type === "toolCall") ids.add(block.id);
  }
  return ids;
}

/* A provider may itself have sent an id of this shape: the next free suffix keeps it unique. */
function replacementId(modelCall: number, position: number, taken: ReadonlySet<string>): string {
  const base = `model${modelCall}_call${position}`;
  let id = base;
  for (let n = 2; taken.has(id); n += 1) id = `${base}_${n}`;
  return id;
}
