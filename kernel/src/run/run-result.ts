import type { JsonValue, RunError, RunRecord, RunStatus, RunStore } from "@assemblyline-agents/core";
import { budgetPauseOf, type BudgetExceeded } from "./budget.js";

export interface PendingApproval {
  approvalId: string;
  callId: string;
  toolName: string;
  input: JsonValue;
}

export interface PendingQuestion {
  callId: string;
  toolName: string;
  question: JsonValue;
}

/** Where a run stands after `run`, `approve`, `deny`, `answer` or `resume`. */
export interface RunResult {
  runId: string;
  status: RunStatus;
  /** The final reply, when completed. */
  response?: { text: string };
  /** Calls waiting for a decision, when `waiting_approval`. */
  pendingApprovals?: PendingApproval[];
  /** The budget the run paused on (`onExceeded: "pause"`): approve to extend it, deny to fail the run. */
  pendingBudget?: BudgetExceeded;
  /** The question waiting for an answer, when `waiting_input`. */
  question?: PendingQuestion;
  error?: RunError;
}

export async function describeRun(runs: RunStore, run: RunRecord): Promise<RunResult> {
  const result: RunResult = { runId: run.id, status: run.status };
  if (run.status === "completed" && run.output && typeof run.output === "object" && !Array.isArray(run.output)) {
    result.response = { text: String((run.output as { text?: JsonValue }).text ?? "") };
  }
  if (run.error) result.error = run.error;
  if (run.status === "waiting_approval" || run.status === "waiting_input") {
    const calls = await runs.listToolCalls(run.id);
    if (run.status === "waiting_approval") {
      result.pendingApprovals = calls
        .filter((call) => call.status === "waiting_approval")
        .map((call) => ({ approvalId: call.approvalId ?? "", callId: call.callId, toolName: call.toolName, input: call.input }));
      if (result.pendingApprovals.length === 0) {
        const pause = budgetPauseOf(await runs.listEvents(run.id));
        if (pause) result.pendingBudget = pause;
      }
    } else {
      const asking = calls.find((call) => call.status === "waiting_input");
      if (asking) result.question = { callId: asking.callId, toolName: asking.toolName, question: asking.question };
    }
  }
  return result;
}
