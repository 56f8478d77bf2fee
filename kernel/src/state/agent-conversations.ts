import type { ConversationMessage, ConversationScope, ConversationStore, RunStore, RuntimeLogger } from "@assemblyline-agents/core";

/** Runtimes (by their logger) already warned, so a store built before `agentId` warns once per runtime, not at every run start. */
const warned = new WeakSet<RuntimeLogger>();

/**
 * The conversation history of one agent (the agent id its run records: a subagent's is
 * `<agent id>/<path>`) in a store other agents may share: appends carry the agent, listings ask for
 * its messages only. What a listing returns is checked too, so another agent's messages never reach
 * a model context or /history: a message of another agent is dropped, and from a store built before
 * `agentId` (its messages carry no `agentId` field) each message is kept only when its run is this
 * agent's, or it has no run, or its run is gone (as the store's own legacy messages are). Over such a
 * store `limit` still counts the other agents' messages, so the agent may see fewer than asked for.
 */
export function agentConversations(
  store: ConversationStore,
  agentId: string,
  runs: Pick<RunStore, "getRun">,
  logger: RuntimeLogger,
): ConversationStore {
  return {
    appendConversationMessages: (conversationId, messages, options?: ConversationScope) =>
      store.appendConversationMessages(conversationId, messages, { ...options, agentId }),
    listConversationMessages: async (conversationId, options?: { limit?: number } & ConversationScope) => {
      const listed = await store.listConversationMessages(conversationId, { ...options, agentId });
      const unscoped = listed.filter((message) => message.agentId === undefined);
      const foreign = listed.filter((message) => typeof message.agentId === "string" && message.agentId !== agentId);
      if (unscoped.length === 0 && foreign.length === 0) return listed;
      const runIds = [...new Set(unscoped.flatMap((message) => (message.runId === null ? [] : [message.runId])))];
      const runAgents = new Map(await Promise.all(runIds.map(async (runId) => [runId, (await runs.getRun(runId))?.agentId] as const)));
      const ours = (message: ConversationMessage) => {
        if (message.agentId !== undefined) return message.agentId === null || message.agentId === agentId;
        const runAgent = message.runId === null ? undefined : runAgents.get(message.runId);
        return runAgent === undefined || runAgent === agentId;
      };
      const kept = listed.filter(ours);
      if (kept.length < listed.length && !warned.has(logger)) {
        warned.add(logger);
        logger.warn(
          { event: "state.conversation_filter_ignored", agentId, conversationId, dropped: listed.length - kept.length },
          "the state store listed other agents' conversation messages: it ignores listConversationMessages' agentId; they were left out of this agent's context; upgrade the state adapter",
        );
      }
      return kept;
    },
  };
}
