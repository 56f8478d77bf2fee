import type { JsonValue, RunError, RunEvent, RunRecord, RunStatus, RunStore } from "@assemblyline-agents/core";
import { budgetPauseOf, type BudgetExceeded } from "./budget.js";

export interface PendingApproval {
  approvalId: string;
  callId: string;
  toolName: string;
  input: JsonValue;
  /** Why the call waits for a person, as its approval gate says (`approvalRequired(reason)`, or the change it would make). */
  reason?: string;
  /** The side-effect class its approval gate records (`"external"` unless the gate names another). */
  sideEffect?: string;
  /** Set when the call belongs to a subagent's run the run waits on: that run and the subagent's path. */
  runId?: string;
  subagent?: string;
}

export interface PendingQuestion {
  callId: string;
  toolName: string;
  question: JsonValue;
  runId?: string;
  subagent?: string;
}

/** Where a run stands after `run`, `approve`, `deny`, `answer` or `resume`. */
export interface RunResult {
  runId: string;
  status: RunStatus;
  /** The final reply, when completed. */
  response?: { text: string };
  /** Calls waiting for a decision, when `waiting_approval`. */
  pendingApprovals?: PendingApproval[];
  /**
   * The budget the run paused on (`onExceeded: "pause"`): approve to extend it, deny to fail the run.
   * With `waitingOn`, the budget of that subagent run, which approve and deny on this run decide.
   */
  pendingBudget?: BudgetExceeded;
  /** The question waiting for an answer, when `waiting_input`. */
  question?: PendingQuestion;
  error?: RunError;
  /** The subagent run whose decision this run waits on (its pending calls are listed above). */
  waitingOn?: { runId: string; subagent: string };
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
      const waiting = calls.filter((call) => call.status === "waiting_approval");
      const events = await runs.listEvents(run.id);
      result.pendingApprovals = waiting.map((call) => ({ approvalId: call.approvalId ?? "", callId: call.callId, toolName: call.toolName, input: call.input, ...gateOf(events, call.callId) }));
      if (result.pendingApprovals.length === 0) {
        const pause = budgetPauseOf(events);
        if (pause) result.pendingBudget = pause;
      }
    } else {
      const asking = calls.find((call) => call.status === "waiting_input");
      if (asking) result.question = { callId: asking.callId, toolName: asking.toolName, question: asking.question };
    }
    if (!result.question && !result.pendingApprovals?.length && !result.pendingBudget) await surfaceChild(runs, run, result);
  }
  return result;
}

/** What the approver is shown of a call's gate: the reason and side-effect class of its latest `approval.requested`. */
function gateOf(events: RunEvent[], callId: string): Pick<PendingApproval, "reason" | "sideEffect"> {
  const asked = events.findLast((event) => event.type === "approval.requested" && event.data.callId === callId);
  const { reason, sideEffect } = asked?.data ?? {};
  return { ...(typeof reason === "string" ? { reason } : {}), ...(typeof sideEffect === "string" ? { sideEffect } : {}) };
}

/** A run paused because its subagent did: show the child's pending decision as the parent's. */
async function surfaceChild(runs: RunStore, run: RunRecord, result: RunResult): Promise<void> {
  const waits = (await runs.listEvents(run.id)).filter((event) => event.type === "subagent.waiting").reverse();
  for (const event of waits) {
    const child = await runs.getRun(String(event.data.childRunId));
    if (!child || child.status !== run.status) continue;
    const described = await describeRun(runs, child);
    const origin = { runId: described.waitingOn?.runId ?? child.id, subagent: described.waitingOn?.subagent ?? child.input.parent?.subagent ?? "" };
    result.waitingOn = origin;
    if (described.pendingApprovals) result.pendingApprovals = described.pendingApprovals.map((call) => ({ ...origin, ...call }));
    if (described.question) result.question = { ...origin, ...described.question };
    // Approving the parent grows the child's budget: the approver must see which budget it is.
    if (described.pendingBudget) result.pendingBudget = described.pendingBudget;
    return;
  }
}
