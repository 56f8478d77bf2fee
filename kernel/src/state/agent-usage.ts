import { isInUsageScope, type RuntimeLogger, type UsageFilter, type UsageRecord, type UsageStore } from "@assemblyline-agents/core";

/** Runtimes (by their logger) already warned, so a store built before `agentId` warns once per runtime, not before every model call. */
const warned = new WeakSet<RuntimeLogger>();

/**
 * `store`, with what its listings return checked: a listing asked with `agentId` holds only that
 * agent's and its subagents' records and those recorded without an agent (`isInUsageScope`), so
 * another agent's spending in a conversation id both serve never counts against this agent's daily
 * budgets. A store built before `UsageFilter.agentId` ignores it and lists every agent's records; the
 * runtime recorded each with its run's agent, so the others' are dropped here (records without one
 * are kept, as the store's own legacy records are) and the store is named once in a warning. One
 * pass over what was listed: budgets list before every model call.
 */
export function agentUsage(store: UsageStore, logger: RuntimeLogger): UsageStore {
  return {
    recordUsage: (record) => store.recordUsage(record),
    listUsage: async (filter: UsageFilter) => {
      const listed = await store.listUsage(filter);
      const { agentId } = filter;
      if (agentId === undefined) return listed;
      const kept = listed.filter((record) => isInUsageScope(record, agentId));
      if (kept.length < listed.length) warnIgnored(logger, filter, agentId, listed, kept);
      return kept;
    },
  };
}

function warnIgnored(logger: RuntimeLogger, filter: UsageFilter, agentId: string, listed: UsageRecord[], kept: UsageRecord[]): void {
  if (warned.has(logger)) return;
  warned.add(logger);
  logger.warn(
    { event: "state.usage_filter_ignored", agentId, ...(filter.conversationId !== undefined ? { conversationId: filter.conversationId } : {}), dropped: listed.length - kept.length },
    "the state store listed other agents' usage records: it ignores listUsage's agentId; they were left out of this agent's budgets; upgrade the state adapter",
  );
}
