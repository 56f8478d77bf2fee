/**
 * Limits the runtime enforces on every run, whatever engine serves it. Counts
 * come from durable records (model steps, tool call records, usage records), so
 * a resume or a crash never resets them.
 */
export interface RunBudgets {
  /** Model calls per run (default 50). */
  maxTurns?: number;
  /** Tool calls per run, failed and denied ones included (default 200). */
  maxToolCalls?: number;
  /** Input + output tokens per run, from the usage records (no default). */
  maxTokens?: number;
  /** Model cost per run in US dollars, from the usage records (no default). */
  maxCostUsd?: number;
  /** Active time per run: from its start (not its time queued), less the time it waited for a human or for recovery (default 1 hour). */
  maxDurationMs?: number;
  /** Tokens per conversation per UTC day, across its runs (no default). */
  maxConversationTokensPerDay?: number;
  /** Cost per conversation per UTC day in US dollars, across its runs (no default). */
  maxConversationCostUsdPerDay?: number;
  /**
   * What reaching a budget does: `"fail"` (default) fails the run with
   * AL_ERR_BUDGET_EXCEEDED; `"pause"` pauses it in `waiting_approval` until a
   * human approves (the budget grows by its limit again) or denies (the run fails).
   */
  onExceeded?: "fail" | "pause";
}

export type RunBudgetName = Exclude<keyof RunBudgets, "onExceeded">;

/** What stops a runaway loop when neither agent.ts nor the host sets a limit. */
export const DEFAULT_RUN_BUDGETS: Readonly<Required<Pick<RunBudgets, "maxTurns" | "maxToolCalls" | "maxDurationMs">>> = Object.freeze({
  maxTurns: 50,
  maxToolCalls: 200,
  maxDurationMs: 60 * 60 * 1000,
});

export const RUN_BUDGET_NAMES: readonly RunBudgetName[] = [
  "maxTurns",
  "maxToolCalls",
  "maxTokens",
  "maxCostUsd",
  "maxDurationMs",
  "maxConversationTokensPerDay",
  "maxConversationCostUsdPerDay",
];
