import { describe, expect, it, onTestFinished } from "vitest";
import type { AgentHarness, ConversationMessage, ConversationScope, ModelMessage, RuntimeLogger, StateAdapter } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { outputOf } from "../kernel/test/support/probe-harness.js";
import { twoAgentsOnOneStore } from "./support/two-agents-one-store.js";

/**
 * Two agents' runtimes on one state store, both serving conversation "shared" (one chat channel's
 * id). Agent B's id starts with agent A's, without the "/" of a subagent.
 */
const AGENT_A = "chatting-agent";
const AGENT_B = "chatting-agent-eu";
const CONVERSATION = "shared";

const { agents, stores, sharedStore } = await twoAgentsOnOneStore("conversation history in a shared store", "al_shared_history", [AGENT_A, AGENT_B]);

/** A runtime whose engine keeps the messages of every model context it is given, and answers with its agent's id. */
function runtimeOf(bundle: RuntimeBundle, state: StateAdapter, logger?: RuntimeLogger): { runtime: OpenEveRuntime; contexts: ModelMessage[][] } {
  const contexts: ModelMessage[][] = [];
  const agentHarness: AgentHarness = {
    name: "keeps-contexts",
    async runTurn(input, ctx) {
      contexts.push(input.context.messages);
      // The history as the agent's file tools show it.
      if (input.context.messages.at(-1)?.content === "read /history") {
        const outcome = await ctx.callTool({ id: "call_history", name: "read", input: { path: "/history/conversation.md" } });
        return { status: "completed", response: { text: JSON.stringify(outputOf(outcome)) } };
      }
      return { status: "completed", response: { text: `answered by ${bundle.manifest.agent.id}` } };
    },
  };
  const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness, ...(logger ? { logger } : {}) });
  onTestFinished(() => runtime.close());
  return { runtime, contexts };
}

/** A logger that keeps the fields of every warning. */
function warningsLogger(): RuntimeLogger & { warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  return { warnings, debug: () => undefined, info: () => undefined, error: () => undefined, warn: (fields) => void warnings.push(fields) };
}

const texts = (messages: ModelMessage[]) => messages.map((message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content)));

/** A and B take turns in conversation "shared"; returns what each engine was given. */
async function takeTurns(state: StateAdapter, logger?: RuntimeLogger) {
  const a = runtimeOf(agents.a, state, logger);
  const b = runtimeOf(agents.b, state);
  expect((await a.runtime.run({ message: "A asks first", conversationId: CONVERSATION })).status).toBe("completed");
  expect((await b.runtime.run({ message: "B asks first", conversationId: CONVERSATION })).status).toBe("completed");
  expect((await a.runtime.run({ message: "A asks again", conversationId: CONVERSATION })).status).toBe("completed");
  expect((await b.runtime.run({ message: "B asks again", conversationId: CONVERSATION })).status).toBe("completed");
  const history = (await a.runtime.run({ message: "read /history", conversationId: CONVERSATION })).response?.text ?? "";
  a.contexts.pop();
  return { a: a.contexts.map(texts), b: b.contexts.map(texts), history };
}

describe.each(Object.entries(stores))("conversation history on a store shared with another agent (%s)", (_name, open) => {
  it("gives each agent's model only its own messages of a conversation id both serve, and the ones written without an agent", async () => {
    const state = await sharedStore(open);
    // Written before histories had an agent: every agent's, as before.
    await state.appendConversationMessages(CONVERSATION, [{ role: "user", content: "legacy question", runId: null, createdAt: new Date().toISOString() }]);
    const logger = warningsLogger();
    const { a, b, history } = await takeTurns(state, logger);

    expect(a).toEqual([
      ["legacy question", "A asks first"],
      ["legacy question", "A asks first", `answered by ${AGENT_A}`, "A asks again"],
    ]);
    expect(history).toContain("A asks again");
    expect(history).toContain("legacy question");
    expect(history).not.toContain("B asks");
    expect(b).toEqual([
      ["legacy question", "B asks first"],
      ["legacy question", "B asks first", `answered by ${AGENT_B}`, "B asks again"],
    ]);
    expect(logger.warnings.filter((fields) => fields.event === "state.conversation_filter_ignored")).toEqual([]);
    // The store holds both agents' turns, each under the agent of its run.
    expect((await state.listConversationMessages(CONVERSATION)).map((message) => [message.content, message.agentId])).toEqual([
      ["legacy question", null],
      ["A asks first", AGENT_A],
      [`answered by ${AGENT_A}`, AGENT_A],
      ["B asks first", AGENT_B],
      [`answered by ${AGENT_B}`, AGENT_B],
      ["A asks again", AGENT_A],
      [`answered by ${AGENT_A}`, AGENT_A],
      ["B asks again", AGENT_B],
      [`answered by ${AGENT_B}`, AGENT_B],
      ["read /history", AGENT_A],
      [expect.stringContaining("A asks again"), AGENT_A],
    ]);
  });
});

describe("conversation history on a store that ignores agentId (one built before it)", () => {
  it("leaves the other agent's messages out of the model context, by their run's agent, and says the store ignores the option", async () => {
    const state = await sharedStore(async () => new InMemoryStateAdapter());
    // As a store built before the option: appends without an agent, lists everything, no agentId field.
    const append = state.appendConversationMessages.bind(state);
    const list = state.listConversationMessages.bind(state);
    state.appendConversationMessages = (conversationId: string, messages: ConversationMessage[]) => append(conversationId, messages);
    state.listConversationMessages = async (conversationId: string, { agentId: _ignored, ...options }: { limit?: number } & ConversationScope = {}) =>
      (await list(conversationId, options)).map(({ agentId: _dropped, ...message }) => message);
    await append(CONVERSATION, [{ role: "user", content: "legacy question", runId: null, createdAt: new Date().toISOString() }]);
    const logger = warningsLogger();
    const { a, history } = await takeTurns(state, logger);

    expect(a).toEqual([
      ["legacy question", "A asks first"],
      ["legacy question", "A asks first", `answered by ${AGENT_A}`, "A asks again"],
    ]);
    expect(history).toContain("A asks again");
    expect(history).not.toContain("B asks");
    expect(logger.warnings.filter((fields) => fields.event === "state.conversation_filter_ignored")).toEqual([
      { event: "state.conversation_filter_ignored", agentId: AGENT_A, conversationId: CONVERSATION, dropped: 2 },
    ]);
  });
});
