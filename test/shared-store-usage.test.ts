import { describe, expect, it, onTestFinished } from "vitest";
import type { AgentHarness, RuntimeLogger, StateAdapter, UsageFilter, UsageRecord } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, type RunResult, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { twoAgentsOnOneStore } from "./support/two-agents-one-store.js";

/**
 * Two agents' runtimes on one state store, both serving conversation "shared" (one chat channel's
 * id) under the same daily budget of 100 tokens. Agent B's id starts with agent A's, without the "/"
 * of a subagent.
 */
const AGENT_A = "spending-agent";
const AGENT_B = "spending-agent-eu";
const CONVERSATION = "shared";
const LIMIT = 100;
/** What each run's one model call spends. */
const TOKENS_PER_RUN = 50;

const { agents, stores, sharedStore } = await twoAgentsOnOneStore("daily conversation budgets in a shared store", "al_shared_usage", [AGENT_A, AGENT_B], {
  budgets: { maxConversationTokensPerDay: LIMIT },
});

/** A runtime whose engine makes one model call a turn and records its usage: TOKENS_PER_RUN tokens. */
function runtimeOf(bundle: RuntimeBundle, state: StateAdapter, logger?: RuntimeLogger): OpenEveRuntime {
  const agentHarness: AgentHarness = {
    name: "spends-tokens",
    async runTurn(input, ctx) {
      const text = await ctx.modelCall("answer", async () => {
        await ctx.recordUsage({ ...tokens(TOKENS_PER_RUN), id: `${input.runId}:answer` });
        return `answered by ${bundle.manifest.agent.id}`;
      });
      return { status: "completed", response: { text } };
    },
  };
  const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness, ...(logger ? { logger } : {}) });
  onTestFinished(() => runtime.close());
  return runtime;
}

const tokens = (count: number) => ({ provider: "test", model: "model", inputTokens: count - 10, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 });

/** Usage already in the store today: a call recorded without an agent (every agent's) and one of A's subagent. */
async function seedUsage(state: StateAdapter): Promise<void> {
  const today = new Date().toISOString();
  const record = (id: string): UsageRecord => ({ ...tokens(30), id, runId: `run_${id}`, conversationId: CONVERSATION, createdAt: today });
  await state.recordUsage(record("legacy"));
  await state.recordUsage({ ...record("a-subagent"), agentId: `${AGENT_A}/researcher` });
}

/** A logger that keeps the fields of every warning. */
function warningsLogger(): RuntimeLogger & { warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  return { warnings, debug: () => undefined, info: () => undefined, error: () => undefined, warn: (fields) => void warnings.push(fields) };
}

/** The budget a run was refused by, or null when it completed. */
async function refusal(state: StateAdapter, result: RunResult) {
  if (result.status === "completed") return null;
  return (await state.listEvents(result.runId)).find((event) => event.type === "budget.exceeded")?.data ?? { status: result.status };
}

/**
 * A and B take turns in conversation "shared". A counts the legacy 30, its subagent's 30 and its own
 * 50 (110: refused); B counts the legacy 30 and its own (refused once past 100 itself, at 130).
 */
async function spendInTurns(state: StateAdapter, loggers: { a?: RuntimeLogger; b?: RuntimeLogger } = {}) {
  const a = runtimeOf(agents.a, state, loggers.a);
  const b = runtimeOf(agents.b, state, loggers.b);
  const turn = async (runtime: OpenEveRuntime) => refusal(state, await runtime.run({ message: "go", conversationId: CONVERSATION }));
  const refused = (used: number) => ({ budget: "maxConversationTokensPerDay", limit: LIMIT, used, action: "fail" });
  expect(await turn(a)).toBeNull();
  expect(await turn(b)).toBeNull();
  expect(await turn(a)).toEqual(refused(110));
  // Every agent's calls together are 160, past the limit: B counts only its own and the legacy one.
  expect(await turn(b)).toBeNull();
  expect(await turn(b)).toEqual(refused(130));
}

describe.each(Object.entries(stores))("daily conversation budgets on a store shared with another agent (%s)", (_name, open) => {
  it("counts only the agent's own calls (its subagents' and those recorded without an agent included) against a conversation id both serve", async () => {
    const state = await sharedStore(open);
    await seedUsage(state);
    const logger = warningsLogger();
    await spendInTurns(state, { a: logger, b: logger });
    expect(logger.warnings.filter((fields) => fields.event === "state.usage_filter_ignored")).toEqual([]);
    // The store holds every call, each under the agent of its run.
    const recorded = await state.listUsage({ conversationId: CONVERSATION });
    expect(recorded.map((record) => record.agentId ?? null)).toEqual([null, `${AGENT_A}/researcher`, AGENT_A, AGENT_B, AGENT_B]);
  });
});

describe("daily conversation budgets on a store that ignores agentId (one built before it)", () => {
  it("leaves the other agent's calls out of the agent's budgets, by their agentId, and says the store ignores the option", async () => {
    const state = await sharedStore(async () => new InMemoryStateAdapter());
    // As a store built before the option: keeps the records whole, lists every agent's.
    const list = state.listUsage.bind(state);
    state.listUsage = ({ agentId: _ignored, ...filter }: UsageFilter) => list(filter);
    await seedUsage(state);
    const loggers = { a: warningsLogger(), b: warningsLogger() };
    await spendInTurns(state, loggers);

    const ignored = (logger: { warnings: Array<Record<string, unknown>> }) => logger.warnings.filter((fields) => fields.event === "state.usage_filter_ignored");
    // B's first call saw A's subagent's and A's; A's second saw B's. Each runtime says so once.
    expect(ignored(loggers.b)).toEqual([{ event: "state.usage_filter_ignored", agentId: AGENT_B, conversationId: CONVERSATION, dropped: 2 }]);
    expect(ignored(loggers.a)).toEqual([{ event: "state.usage_filter_ignored", agentId: AGENT_A, conversationId: CONVERSATION, dropped: 1 }]);
  });
});

describe("daily conversation budgets and yesterday's usage", () => {
  it("list the conversation's usage since today's midnight (UTC), and count none of yesterday's even from a store that ignores since", async () => {
    const state = await sharedStore(async () => new InMemoryStateAdapter());
    // Yesterday A spent far past its daily limit; a store that ignores `since` lists it anyway.
    const yesterday = new Date(Date.now() - 24 * 60 * 60 * 1000).toISOString();
    await state.recordUsage({ ...tokens(10 * LIMIT), id: "yesterday", runId: "run_yesterday", conversationId: CONVERSATION, agentId: AGENT_A, createdAt: yesterday });
    const filters: UsageFilter[] = [];
    const list = state.listUsage.bind(state);
    state.listUsage = ({ since: _ignored, ...filter }: UsageFilter) => {
      filters.push({ ...filter, ...(_ignored !== undefined ? { since: _ignored } : {}) });
      return list(filter);
    };
    const a = runtimeOf(agents.a, state);
    expect(await refusal(state, await a.run({ message: "go", conversationId: CONVERSATION }))).toBeNull();
    const midnight = `${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`;
    const listings = filters.filter((filter) => filter.conversationId === CONVERSATION);
    expect(listings.length).toBeGreaterThan(0);
    expect(listings).toEqual(listings.map(() => ({ conversationId: CONVERSATION, agentId: AGENT_A, since: midnight })));
  });
});
