import type { RunJournal } from "./journal.js";
import { sharedCeilingReached } from "./shared-budget.js";
import {
  AssemblyLineError,
  DEFAULT_RUN_BUDGETS,
  RUN_BUDGET_NAMES,
  type NewDelivery,
  type RunBudgetName,
  type RunBudgets,
  type RunEvent,
  type RunRecord,
  type RunStore,
  type RuntimeLogger,
  type UsageFilter,
  type UsageRecord,
  type UsageStore,
} from "@assemblyline-agents/core";

/**
 * The limits a run runs under: for each budget the lower of agent.ts's and the
 * host's (a host ceiling always wins), else the default.
 */
export function resolveBudgets(agent: RunBudgets | undefined, host: RunBudgets | undefined): RunBudgets {
  checkBudgets(agent, "agent.ts budgets");
  checkBudgets(host, "the host's budgets");
  const limits: RunBudgets = {};
  for (const name of RUN_BUDGET_NAMES) {
    const candidates = [agent?.[name], host?.[name]].filter((value): value is number => value !== undefined);
    const limit = candidates.length > 0 ? Math.min(...candidates) : (DEFAULT_RUN_BUDGETS as RunBudgets)[name];
    if (limit !== undefined) limits[name] = limit;
  }
  const onExceeded = host?.onExceeded ?? agent?.onExceeded;
  if (onExceeded) limits.onExceeded = onExceeded;
  return limits;
}

export function checkBudgets(budgets: unknown, where: string): asserts budgets is RunBudgets | undefined {
  if (budgets === undefined) return;
  if (typeof budgets !== "object" || budgets === null || Array.isArray(budgets)) {
    throw new AssemblyLineError("AL_ERR_BUDGET_INVALID", `${where} must be an object of limits`, { fix: `Write ${where} as { maxTurns: 20, maxCostUsd: 1 }.` });
  }
  for (const [name, value] of Object.entries(budgets)) {
    if (name === "onExceeded") {
      if (value !== undefined && value !== "fail" && value !== "pause") {
        throw new AssemblyLineError("AL_ERR_BUDGET_INVALID", `${where}.onExceeded is ${shownValue(value)}`, { fix: 'Use "fail" (the default) or "pause".' });
      }
      continue;
    }
    if (!(RUN_BUDGET_NAMES as readonly string[]).includes(name)) {
      throw new AssemblyLineError("AL_ERR_BUDGET_INVALID", `${where} has an unknown budget "${name}"`, { fix: `Use one of: ${RUN_BUDGET_NAMES.join(", ")}.` });
    }
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value <= 0)) {
      throw new AssemblyLineError("AL_ERR_BUDGET_INVALID", `${where}.${name} is ${shownValue(value)}; it must be a positive number`, {
        fix: `Set ${name} to a positive finite number, or leave it out.`,
      });
    }
    // A count limit of 2.5 would allow 2 and report "2 used of 2.5": refuse it rather than guess.
    if (value !== undefined && COUNTED.has(name) && !Number.isInteger(value)) {
      throw new AssemblyLineError("AL_ERR_BUDGET_INVALID", `${where}.${name} is ${shownValue(value)}; it counts whole ${COUNTED.get(name)}, so it must be a whole number`, {
        fix: `Set ${name} to a whole number such as ${Math.max(1, Math.round(value as number))}, or leave it out.`,
      });
    }
  }
}

/**
 * A budget value as an error shows it. JSON.stringify shows NaN and Infinity as null (NaN is what
 * `Number(process.env.X)` gives when X is unset) and throws on a bigint.
 */
function shownValue(value: unknown): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "bigint") return `${String(value)}n (a bigint)`;
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** Budgets that count whole things, and what they count. */
const COUNTED = new Map<string, string>([
  ["maxTurns", "model calls"],
  ["maxToolCalls", "tool calls"],
  ["maxTokens", "tokens"],
  ["maxConversationTokensPerDay", "tokens"],
]);

export interface BudgetExceeded {
  budget: RunBudgetName;
  limit: number;
  used: number;
}

export function budgetExceededError(runId: string, exceeded: BudgetExceeded): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_BUDGET_EXCEEDED", `run ${runId} reached its ${exceeded.budget} budget (${exceeded.used} used of ${exceeded.limit})`, {
    fix: `Raise budgets.${exceeded.budget} in agent.ts or the host's budgets option if the work is legitimate; otherwise fix what keeps the model looping.`,
    details: { ...exceeded },
  });
}

/**
 * Abort reasons that pause the run they stop instead of ending it, each mapped to that run: its `maxDurationMs`
 * reached under `onExceeded: "pause"`. Approving the pause replays the calls they stopped; the spawner passes such
 * a stop on to the subagents those calls were driving as a pause of their own (subagents/parent-paused.ts).
 */
const PAUSING_STOPS = new WeakMap<object, string>();

/** Whether `reason` is run `runId`'s own pausing budget stop (see PAUSING_STOPS), not any other run's. */
export function isPausingStopOf(reason: unknown, runId: string): boolean {
  return typeof reason === "object" && reason !== null && PAUSING_STOPS.get(reason) === runId;
}

/** Events after which a run stood still: the gap to the next event is not active time. */
const RESTING = new Set(["run.waiting_approval", "run.waiting_input"]);

/**
 * Events a resting run records while it still waits, or as it is woken: the decisions (one of
 * several pending approvals is decided while the others still wait), observers' failures, a
 * child's pause. The wait lasts until the last of them before the run's next work.
 */
const WHILE_RESTING = new Set([
  ...RESTING,
  "approval.granted",
  "approval.denied",
  "input.received",
  "budget.extended",
  "subagent.waiting",
  "subagent.resumed_parent",
  "run.resumed",
  "hook.failed",
]);

/**
 * One drive's view of a run's budgets. Counts start from the durable records
 * (completed model steps, tool call records, usage records) and grow with
 * what this drive adds, so neither a resume nor a crash resets them.
 */
export class RunBudget {
  exceeded: BudgetExceeded | null = null;
  /** The run's start, parsed once: checked before every model and tool call, and Date.parse costs about a microsecond. */
  private readonly startedAtMs: number;
  /** What the run's subagents spent, summed from its events up to `afterSeq`: each check reads only the events since. */
  private readonly delegated = { afterSeq: 0, tokens: 0, costUsd: 0 };
  /** Whether this drive warned that a cost budget counts a model without prices: once is enough. */
  private unpricedWarned = false;

  private constructor(
    private readonly run: RunRecord,
    private readonly limits: RunBudgets,
    /** Whether the run may spawn subagents: their spending (its `subagent.completed` events) counts in its token and cost budgets. */
    private readonly delegates: { runs: RunStore } | undefined,
    /** For a subagent's run spawned with a ceiling (`budgetLeft`), which it shares with its siblings: see shared-budget.ts. */
    private readonly shared: { runs: RunStore; extended: Partial<Record<RunBudgetName, number>> } | undefined,
    private readonly usage: UsageStore,
    private readonly logger: RuntimeLogger,
    private turns: number,
    private toolCalls: number,
    /** Time the run spent waiting for a human or for a replica to recover it. */
    private readonly idleMs: number,
    /** When the run started (not when it was queued: waiting for a slot is no active time). */
    startedAt: number,
  ) {
    this.startedAtMs = startedAt;
  }

  static async load(
    run: RunRecord,
    limits: RunBudgets,
    stores: { runs: RunStore; usage: UsageStore; logger: RuntimeLogger },
    options: { fresh: boolean; delegates?: boolean },
  ): Promise<RunBudget> {
    const own = narrowedLimits(limits, run);
    const delegates = options.delegates ? { runs: stores.runs } : undefined;
    const sharesCeiling = run.input.parent?.budgetLeft !== undefined && run.input.parent.budgetSeq !== undefined;
    // A run that has just started has nothing counted yet: no reads on the hot path.
    // It starts now: the time it stood queued is not active.
    if (options.fresh) return new RunBudget(run, own, delegates, sharesCeiling ? { runs: stores.runs, extended: {} } : undefined, stores.usage, stores.logger, 0, 0, 0, Date.now());
    const [events, calls] = await Promise.all([stores.runs.listEvents(run.id), stores.runs.listToolCalls(run.id)]);
    const turns = events.filter((event) => event.type === "durable_step.completed" && isModelStep(event)).length;
    const started = events.find((event) => event.type === "run.started");
    // A human's extensions of this run's budgets raise the ceilings it shares too.
    const shared = sharesCeiling ? { runs: stores.runs, extended: extendedLimits({}, events) } : undefined;
    return new RunBudget(run, extendedLimits(own, events), delegates, shared, stores.usage, stores.logger, turns, calls.length, idleTime(events), Date.parse(startedAtOf(started) ?? run.createdAt));
  }

  /**
   * Before a model call that will really run (not a replay). The call is counted
   * before the first await: an engine that makes calls concurrently (parallel tool
   * calls, a background model call) must not see the same count twice and let
   * every one of them past the limit.
   */
  async beforeModelCall(): Promise<void> {
    this.check("maxTurns", this.turns + 1);
    this.checkDuration();
    this.turns += 1;
    try {
      await this.checkUsage();
    } catch (error) {
      this.turns -= 1;
      throw error;
    }
  }

  /** Before a tool call that is new to the run (not a replay); counted at once, as above. */
  async beforeToolCall(): Promise<void> {
    this.check("maxToolCalls", this.toolCalls + 1);
    this.checkDuration();
    this.toolCalls += 1;
    try {
      await this.checkUsage();
    } catch (error) {
      this.toolCalls -= 1;
      throw error;
    }
  }

  /**
   * Active time left before `maxDurationMs`, for a timer that stops a call still running then (a model
   * stream that stalls, a tool that never returns); undefined without that budget.
   */
  durationLeftMs(): number | undefined {
    const limit = this.limits.maxDurationMs;
    return limit === undefined ? undefined : limit - (Date.now() - this.startedAtMs - this.idleMs);
  }

  /** Whether reaching a budget pauses the run for a decision (`onExceeded: "pause"`) rather than failing it. */
  get pausesWhenExceeded(): boolean {
    return this.limits.onExceeded === "pause";
  }

  /**
   * `maxDurationMs` reached while a call ran: recorded as the budget exceeded, and the error that stops the call.
   * Under `onExceeded: "pause"` the error is the run's pausing stop (isPausingStopOf): the run pauses on it rather than ends.
   */
  durationReached(): AssemblyLineError {
    this.exceeded ??= { budget: "maxDurationMs", limit: this.limits.maxDurationMs ?? 0, used: Date.now() - this.startedAtMs - this.idleMs };
    const error = budgetExceededError(this.run.id, this.exceeded);
    if (this.pausesWhenExceeded) PAUSING_STOPS.set(error, this.run.id);
    return error;
  }

  /** What the run's subagents spent so far, reading the events appended since the last check. */
  private async delegatedSoFar(runs: RunStore): Promise<SpentUsage> {
    const fresh = await runs.listEvents(this.run.id, { afterSeq: this.delegated.afterSeq });
    const spent = delegatedUsageOf(fresh);
    this.delegated.tokens += spent.tokens;
    this.delegated.costUsd = roundCost(this.delegated.costUsd + spent.costUsd);
    this.delegated.afterSeq = fresh.at(-1)?.seq ?? this.delegated.afterSeq;
    return this.delegated;
  }

  private checkDuration(): void {
    const active = Date.now() - this.startedAtMs - this.idleMs;
    this.check("maxDurationMs", active, true);
  }

  private async checkUsage(): Promise<void> {
    const { maxTokens, maxCostUsd, maxConversationTokensPerDay, maxConversationCostUsdPerDay } = this.limits;
    if (maxTokens !== undefined || maxCostUsd !== undefined) {
      const records = await this.readUsage({ runId: this.run.id }, ["maxTokens", "maxCostUsd"]);
      if (records !== undefined) {
        // Read only for a run that can delegate: the others have no subagent.completed events to sum.
        const delegated = this.delegates ? await this.delegatedSoFar(this.delegates.runs) : NOTHING_SPENT;
        if (maxCostUsd !== undefined) this.warnIfUnpriced(records, "maxCostUsd");
        this.check("maxTokens", sumTokens(records) + delegated.tokens, true);
        this.check("maxCostUsd", roundCost(sumCost(records) + delegated.costUsd), true);
        if (this.shared) await this.checkSharedCeiling(this.shared, records);
      }
    }
    const conversationId = budgetConversationOf(this.run);
    if (conversationId && (maxConversationTokensPerDay !== undefined || maxConversationCostUsdPerDay !== undefined)) {
      const today = new Date().toISOString().slice(0, 10);
      // Only the root agent's calls (its subagents' included): another agent serving the same conversation id spends its own budget.
      // Only today's, read from the store as such (`since`), so a long conversation's history is not listed before every call.
      const listed = await this.readUsage({ conversationId, agentId: rootAgentOf(this.run), since: `${today}T00:00:00.000Z` }, ["maxConversationTokensPerDay", "maxConversationCostUsdPerDay"]);
      const records = (listed ?? []).filter((record) => record.createdAt.startsWith(today));
      if (maxConversationCostUsdPerDay !== undefined) this.warnIfUnpriced(records, "maxConversationCostUsdPerDay");
      this.check("maxConversationTokensPerDay", sumTokens(records), true);
      this.check("maxConversationCostUsdPerDay", sumCost(records), true);
    }
  }

  /**
   * A model without prices (one a host declared without `cost`, or an engine that records none) costs
   * $0 a call, so a cost budget never stops its calls: said once per drive of the run rather than left
   * for the user to find on the bill.
   */
  private warnIfUnpriced(records: UsageRecord[], budget: "maxCostUsd" | "maxConversationCostUsdPerDay"): void {
    if (this.unpricedWarned) return;
    const unpriced = records.find((record) => record.costUsd === 0 && record.inputTokens + record.outputTokens + record.cacheReadTokens + record.cacheWriteTokens > 0);
    if (!unpriced) return;
    this.unpricedWarned = true;
    const model = `${unpriced.provider}/${unpriced.model}`;
    this.logger.warn(
      { runId: this.run.id, event: "budget.unpriced_model", budget, limit: this.limits[budget] ?? null, model },
      `model ${model} has no price: its calls count as $0, so ${budget} never stops them; give the model prices where its engine takes them (Pi: models["<spec>"].cost) or bound it with ${budget === "maxCostUsd" ? "maxTokens" : "maxConversationTokensPerDay"}`,
    );
  }

  /**
   * The usage records a check counts, or undefined when the usage store failed to list them: a
   * failing usage facet is degraded observability and never blocks a model request, so the usage
   * budgets go unchecked for this call (logged as `usage.degraded`) and are checked again at the next.
   */
  private async readUsage(filter: UsageFilter, budgets: RunBudgetName[]): Promise<UsageRecord[] | undefined> {
    try {
      return await this.usage.listUsage(filter);
    } catch (error) {
      const unchecked = budgets.filter((budget) => this.limits[budget] !== undefined);
      this.logger.warn({ runId: this.run.id, event: "usage.degraded", budgets: unchecked, err: String(error) }, "usage could not be read; these budgets were not checked for this call");
      return undefined;
    }
  }

  /** The ceilings this run shares with subagents spawned beside it, and above it (shared-budget.ts). */
  private async checkSharedCeiling(shared: NonNullable<RunBudget["shared"]>, ownRecords: UsageRecord[]): Promise<void> {
    let reached: BudgetExceeded | null;
    try {
      reached = await sharedCeilingReached(this.run, { runs: shared.runs, usage: this.usage }, shared.extended, ownRecords);
    } catch (error) {
      // As a failing usage read does: degraded, checked again before the next call.
      this.logger.warn({ runId: this.run.id, event: "usage.degraded", budgets: [...DELEGATED_BUDGETS], err: String(error) }, "the shared subagent ceilings could not be read; not checked for this call");
      return;
    }
    if (reached) {
      this.exceeded = reached;
      throw budgetExceededError(this.run.id, reached);
    }
  }

  /**
   * Counted budgets refuse the call that would go past the limit; measured ones
   * (`reached`) refuse once the usage so far has reached it.
   */
  private check(budget: RunBudgetName, used: number, reached = false): void {
    const limit = this.limits[budget];
    if (limit === undefined) return;
    if (reached ? used >= limit : used > limit) {
      this.exceeded = { budget, limit, used: reached ? used : used - 1 };
      throw budgetExceededError(this.run.id, this.exceeded);
    }
  }
}

/**
 * The conversation whose daily budgets count `run`'s model calls: its own, or for a subagent's run its
 * root run's, so that delegating never spends past the day's limit of the conversation it serves.
 */
export function budgetConversationOf(run: RunRecord): string | null {
  const parent = run.input.parent;
  return parent?.budgetConversationId !== undefined ? parent.budgetConversationId : run.conversationId;
}

/**
 * The agent whose conversation budgets count `run`'s model calls: its own, or for a subagent's run
 * (agent id `<agent id>/<path>`) the root agent's.
 */
export function rootAgentOf(run: RunRecord): string {
  const path = run.input.parent?.subagent;
  return path !== undefined && run.agentId.endsWith(`/${path}`) ? run.agentId.slice(0, -path.length - 1) : run.agentId;
}

/** What model calls spent: tokens as the token budgets count them (input + output), and cost in USD. */
export interface SpentUsage {
  tokens: number;
  costUsd: number;
}

const NOTHING_SPENT: SpentUsage = { tokens: 0, costUsd: 0 };

/** The token and cost budgets a run's subagents spend from: what the spawning run had left is their ceiling. */
export const DELEGATED_BUDGETS = ["maxTokens", "maxCostUsd"] as const;

/**
 * A subagent run's limits: its own, lowered to what its parent had left of the same budget when it
 * spawned it (`SubagentParent.budgetLeft`), so delegating never spends past the spawning run's budget.
 */
export function narrowedLimits(limits: RunBudgets, run: RunRecord): RunBudgets {
  const left = run.input.parent?.budgetLeft;
  if (!left) return limits;
  const narrowed = { ...limits };
  for (const name of DELEGATED_BUDGETS) {
    const ceiling = left[name];
    if (ceiling !== undefined) narrowed[name] = Math.max(0, Math.min(narrowed[name] ?? Number.POSITIVE_INFINITY, ceiling));
  }
  return narrowed;
}

/** What the subagent runs a run spawned spent, all depths: the sums their `subagent.completed` events carry. */
export function delegatedUsageOf(events: RunEvent[]): SpentUsage {
  let tokens = 0;
  let costUsd = 0;
  for (const event of events) {
    if (event.type !== "subagent.completed") continue;
    const usage = event.data.usage;
    if (typeof usage !== "object" || usage === null || Array.isArray(usage)) continue;
    tokens += typeof usage.tokens === "number" ? usage.tokens : 0;
    costUsd += typeof usage.costUsd === "number" ? usage.costUsd : 0;
  }
  return { tokens, costUsd: roundCost(costUsd) };
}

/** What a run spent, its own model calls and its finished subagent runs' (all depths); `events`, the run's, when already read. */
export async function spentByRun(runId: string, stores: { runs: RunStore; usage: UsageStore }, events?: RunEvent[]): Promise<SpentUsage> {
  const [records, read] = await Promise.all([stores.usage.listUsage({ runId }), events ?? stores.runs.listEvents(runId)]);
  const delegated = delegatedUsageOf(read);
  return { tokens: sumTokens(records) + delegated.tokens, costUsd: roundCost(sumCost(records) + delegated.costUsd) };
}

/** A budget a human extended (`budget.extended`) keeps its larger limit for the rest of the run. */
export function extendedLimits(limits: RunBudgets, events: RunEvent[]): RunBudgets {
  const extended = { ...limits };
  for (const event of events) {
    if (event.type !== "budget.extended") continue;
    const budget = event.data.budget as RunBudgetName;
    extended[budget] = Math.max(extended[budget] ?? 0, Number(event.data.limit));
  }
  return extended;
}

/**
 * The budget a run paused on, when its latest pause was a budget's: the last
 * `budget.exceeded` that paused and has no `budget.extended` after it.
 */
export function budgetPauseOf(events: RunEvent[]): BudgetExceeded | null {
  const event = budgetPauseEventOf(events);
  return event ? { budget: event.data.budget as RunBudgetName, limit: Number(event.data.limit), used: Number(event.data.used) } : null;
}

/** The `budget.exceeded` event of the pause budgetPauseOf finds: its seq tells one pause of a run from the next. */
export function budgetPauseEventOf(events: RunEvent[]): RunEvent | null {
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.type === "budget.extended" || event.type === "approval.requested" || event.type === "input.requested") return null;
    if (event.type === "budget.exceeded") return event.data.action === "pause" ? event : null;
  }
  return null;
}

/**
 * When a run started. `run.started` is held and committed with the run's next append (after its first
 * model call, which may take minutes), so its `createdAt` is late: the driver writes the time it held it
 * as `data.startedAt`. Runs recorded before it did fall back to `createdAt`.
 */
function startedAtOf(started: RunEvent | undefined): string | undefined {
  const startedAt = started?.data.startedAt;
  return typeof startedAt === "string" && !Number.isNaN(Date.parse(startedAt)) ? startedAt : started?.createdAt;
}

function isModelStep(event: RunEvent): boolean {
  const metadata = event.data.metadata;
  return typeof metadata === "object" && metadata !== null && !Array.isArray(metadata) && metadata.modelCall === true;
}

/**
 * Time a run stood still: from each pause until the last event it recorded while it still waited
 * (its decisions), and before each `run.resumed` (a replica recovering it after a crash) the time
 * after the crashed drive's lease lapsed.
 */
function idleTime(events: RunEvent[]): number {
  let idle = 0;
  let resting = false;
  for (let index = 1; index < events.length; index += 1) {
    const event = events[index]!;
    const gap = Date.parse(event.createdAt) - Date.parse(events[index - 1]!.createdAt);
    if (event.type === "run.resumed") idle += idleBeforeResume(event, gap);
    else if (resting && WHILE_RESTING.has(event.type)) idle += gap;
    resting = RESTING.has(event.type) || (resting && WHILE_RESTING.has(event.type));
  }
  return idle;
}

/**
 * The part of the `gap` before a `run.resumed` that the run stood still. The drive a crash cut was at work
 * until its lease lapsed (`leaseLapsedAt`, the latest it can have stopped): only the time after that is idle.
 * Without it (a run released at shutdown, a store that does not report the lease it replaced, an event
 * recorded before it was written) the whole gap is.
 */
function idleBeforeResume(resumed: RunEvent, gap: number): number {
  const lapsedAt = typeof resumed.data.leaseLapsedAt === "string" ? Date.parse(resumed.data.leaseLapsedAt) : Number.NaN;
  if (Number.isNaN(lapsedAt)) return gap;
  // Clamped to the gap: the store's clock (a database's) may differ from the one that stamped the events.
  return Math.max(0, Math.min(gap, Date.parse(resumed.createdAt) - lapsedAt));
}

/** Tokens as the token budgets count them: input + output. */
export const sumTokens = (records: UsageRecord[]) => records.reduce((total, record) => total + record.inputTokens + record.outputTokens, 0);
export const roundCost = (cost: number) => Math.round(cost * 1e9) / 1e9;
export const sumCost = (records: UsageRecord[]) => roundCost(records.reduce((total, record) => total + record.costUsd, 0));

/** Whether a failed run's events end in the denial of its budget pause (decideBudgetPause's `run.failed`, the only one naming an actor). */
export function failedOnDeniedPause(events: RunEvent[]): boolean {
  const failed = events.findLast((event) => event.type === "run.failed");
  return failed !== undefined && "actor" in failed.data && failed.data.code === "AL_ERR_BUDGET_EXCEEDED";
}

/**
 * A human's decision on a run paused by a budget: approving grows the budget
 * by its base limit again, from what was used (a measured budget can pass its
 * limit: one model call's tokens), and lets the run go on; denying fails it,
 * with the denial's reason.
 */
export async function decideBudgetPause(
  journal: RunJournal,
  run: RunRecord,
  pause: BudgetExceeded,
  base: RunBudgets,
  decision: "approved" | "denied",
  actor: string | null,
  /** What the run's failure owes its channel (RunDriver.failureDeliveryOf), written with it. */
  failureDelivery?: (code: string) => NewDelivery | undefined,
  reason?: string,
): Promise<void> {
  if (decision === "approved") {
    const limit = Math.max(pause.limit, pause.used) + (base[pause.budget] ?? pause.limit);
    await journal.record(run.id, "budget.extended", { budget: pause.budget, limit, actor }, { run: { status: "running" } }, { expectedLastSeq: run.lastSeq });
    return;
  }
  const error = budgetExceededError(run.id, pause);
  const delivery = failureDelivery?.(error.code);
  await journal.record(
    run.id,
    "run.failed",
    { error: error.message, code: error.code, actor, ...(reason ? { reason } : {}) },
    { run: { status: "failed", error: { message: error.message, code: error.code } }, checkpoint: null, ...(delivery ? { delivery } : {}) },
    { expectedLastSeq: run.lastSeq },
  );
}
