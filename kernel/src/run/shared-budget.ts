import type { RunBudgetName, RunEvent, RunRecord, RunStore, UsageRecord, UsageStore } from "@assemblyline-agents/core";
import { DELEGATED_BUDGETS, delegatedUsageOf, roundCost, sumCost, sumTokens, type BudgetExceeded, type SpentUsage } from "./budget.js";

/** Subagent depth is bounded by the host (subagents.maxDepth); this only stops a walk up a cycle in corrupt state. */
const MAX_LEVELS = 64;

type Stores = { runs: RunStore; usage: UsageStore };

/**
 * Subagents spawned at the same time each start with what their parent had left then
 * (`SubagentParent.budgetLeft`), so apart they could spend it more than once. Before each call a
 * subagent's run makes, every such ceiling on the way up from it is held to what was spent under it:
 * at each level, the run there (its own calls and all its subagents', those still running too) and
 * its siblings that the ceiling did not count (spawned beside it, or finished after it was spawned).
 * `extended`: the limits a human raised this run's budgets to, which raise every ceiling above it
 * too (else approving its pause would pause it again at once).
 *
 * Returns the budget reached at the level that spent most, so one approval covers every level;
 * null when none is reached.
 */
export async function sharedCeilingReached(
  run: RunRecord,
  stores: Stores,
  extended: Partial<Record<RunBudgetName, number>>,
  /** The run's own usage records, as its own budget check just read them. */
  ownRecords: UsageRecord[],
): Promise<BudgetExceeded | null> {
  const spent = new Map<string, Promise<SpentUsage>>();
  const spentUnder = (runId: string): Promise<SpentUsage> => {
    let pending = spent.get(runId);
    if (pending === undefined) {
      pending = liveSpentOf(runId, stores, spentUnder, runId === run.id ? ownRecords : undefined);
      spent.set(runId, pending);
    }
    return pending;
  };
  let reached: BudgetExceeded | null = null;
  let level = run;
  for (let depth = 0; depth < MAX_LEVELS; depth += 1) {
    const parent = level.input.parent;
    const ceiling = parent?.budgetLeft;
    if (!parent || !ceiling || parent.budgetSeq === undefined) break;
    const siblingsEvents = await stores.runs.listEvents(parent.runId);
    const total = await levelSpent(level.id, parent.budgetSeq, siblingsEvents, spentUnder);
    for (const budget of DELEGATED_BUDGETS) {
      const base = ceiling[budget];
      if (base === undefined) continue;
      const limit = Math.max(base, extended[budget] ?? 0);
      const used = budget === "maxTokens" ? total.tokens : total.costUsd;
      if (used >= limit && (reached === null || used - limit > reached.used - reached.limit)) reached = { budget, limit, used };
    }
    const above = await stores.runs.getRun(parent.runId);
    if (!above) break;
    level = above;
  }
  return reached;
}

/**
 * What the run `runId` and its siblings share of the ceiling it was spawned with: its own spending
 * and that of each sibling the ceiling did not count, one that had not finished by `budgetSeq`.
 */
async function levelSpent(runId: string, budgetSeq: number, parentEvents: RunEvent[], spentUnder: (runId: string) => Promise<SpentUsage>): Promise<SpentUsage> {
  const counted = new Set(parentEvents.filter((event) => event.type === "subagent.completed" && event.seq <= budgetSeq).map((event) => String(event.data.childRunId)));
  const sharing = new Set([runId]);
  for (const event of parentEvents) {
    if (event.type === "subagent.started" && !counted.has(String(event.data.childRunId))) sharing.add(String(event.data.childRunId));
  }
  let tokens = 0;
  let costUsd = 0;
  for (const spent of await Promise.all([...sharing].map((id) => spentUnder(id)))) {
    tokens += spent.tokens;
    costUsd += spent.costUsd;
  }
  return { tokens, costUsd: roundCost(costUsd) };
}

/**
 * What a run spent with everything under it, now: its own model calls, its finished subagents' (the
 * sums on their `subagent.completed` events) and, walking down, what its running subagents spent so far.
 */
async function liveSpentOf(runId: string, stores: Stores, spentUnder: (runId: string) => Promise<SpentUsage>, read?: UsageRecord[]): Promise<SpentUsage> {
  const [records, events] = await Promise.all([read ?? stores.usage.listUsage({ runId }), stores.runs.listEvents(runId)]);
  const finished = delegatedUsageOf(events);
  const done = new Set(events.filter((event) => event.type === "subagent.completed").map((event) => String(event.data.childRunId)));
  const running = events.filter((event) => event.type === "subagent.started" && !done.has(String(event.data.childRunId))).map((event) => String(event.data.childRunId));
  let tokens = sumTokens(records) + finished.tokens;
  let costUsd = sumCost(records) + finished.costUsd;
  for (const spent of await Promise.all(running.map((id) => spentUnder(id)))) {
    tokens += spent.tokens;
    costUsd += spent.costUsd;
  }
  return { tokens, costUsd: roundCost(costUsd) };
}
