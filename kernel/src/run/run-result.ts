import type { JsonValue, RunError, RunEvent, RunRecord, RunStatus, RunStore } from "@assemblyline-agents/core";
import type { SkillWriteResult } from "../skills/skill-library.js";
import type { ProposedSkillText } from "../skills/write-approval.js";
import { budgetPauseOf, type BudgetExceeded } from "./budget.js";

/**
 * A skill write waiting for approval (`selfImprovement.writeApproval`): the skill and file, the digests of the
 * file before and after (null: it does not exist then), the `binding` the approval is held to, and the text it
 * would write (left out by a request recorded before the text was carried).
 */
export type PendingSkillWrite = SkillWriteResult & { binding: string; proposed?: ProposedSkillText };

export interface PendingApproval {
  approvalId: string;
  callId: string;
  toolName: string;
  input: JsonValue;
  /** Why the call waits for a person, as its approval gate says (`approvalRequired(reason)`, or the change it would make). */
  reason?: string;
  /** The side-effect class its approval gate records (`"external"` unless the gate names another). */
  sideEffect?: string;
  /**
   * The change the call would make through a run-time API whose changes need approval (`ctx.automationManager`,
   * `ctx.connectionManager`), as its approval request shows it: `{ action, ... }`, e.g. `{ action: "create",
   * name, automation }` or `{ action: "remove", connection }`. Approving lets exactly this change through.
   */
  change?: JsonValue;
  /** The skill write the call waits to make, when `selfImprovement.writeApproval` gated it: what the approver reads of it. */
  skillWrite?: PendingSkillWrite;
  /** Set when the call belongs to a subagent's run the run waits on: that run and the subagent's path. */
  runId?: string;
  subagent?: string;
}

export interface PendingQuestion {
  callId: string;
  toolName: string;
  question: JsonValue;
  /** Set when the question belongs to a subagent's run the run waits on: that run and the subagent's path. */
  runId?: string;
  subagent?: string;
}

/** A subagent run a paused run waits on: it, or a subagent run below it, waits for a decision or an answer. */
export interface WaitedOnRun {
  runId: string;
  subagent: string;
  /** The budget that run paused on (`onExceeded: "pause"`): approve or deny with `{ runId }` naming it decides it. */
  pendingBudget?: BudgetExceeded;
}

/** Where a run stands after `run`, `approve`, `deny`, `answer` or `resume`. */
export interface RunResult {
  runId: string;
  status: RunStatus;
  /** The final reply, when completed. */
  response?: { text: string };
  /**
   * Calls waiting for a decision, when `waiting_approval`. A run paused on its subagents lists the calls of
   * every one of them that waits (each with its `runId` and `subagent`), whatever the run's own status: two
   * subagents spawned together may wait, one for an approval, the other for an answer.
   */
  pendingApprovals?: PendingApproval[];
  /**
   * The budget the run paused on (`onExceeded: "pause"`): approve and deny without a call id decide it.
   * With `waitingOn`, the budget of that subagent run (the budgets of the others it waits on are in `waitingOnAll`).
   */
  pendingBudget?: BudgetExceeded;
  /**
   * The question waiting for an answer: the first of `questions`. Answer it by its `callId`, and its `runId`
   * when it is a subagent's (two subagents' calls may share a call id).
   */
  question?: PendingQuestion;
  /**
   * Every question waiting for an answer, `question` first: an engine that makes tool calls in parallel can ask
   * more than one, and so can several subagents the run waits on (each with its `runId` and `subagent`).
   */
  questions?: PendingQuestion[];
  error?: RunError;
  /** The subagent run whose decision this run waits on: the first of `waitingOnAll`. */
  waitingOn?: { runId: string; subagent: string };
  /**
   * Every subagent run this run waits on that waits itself, `waitingOn` first (in the order they paused): their
   * pending calls are in `pendingApprovals` and `questions`. A decision or answer given to this run goes to the
   * run that has the call it names (pass `runId` too when two of them have a call of that id); one that names
   * no call goes to the first of them that waits for that kind (its only pending call, or its budget).
   */
  waitingOnAll?: WaitedOnRun[];
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
      const asking = calls.filter((call) => call.status === "waiting_input");
      if (asking.length > 0) setQuestions(result, asking.map((call) => ({ callId: call.callId, toolName: call.toolName, question: call.question })));
    }
    if (!result.question && !result.pendingApprovals?.length && !result.pendingBudget) await surfaceChildren(runs, run, result);
  }
  return result;
}

function setQuestions(result: RunResult, questions: PendingQuestion[]): void {
  result.question = questions[0]!;
  result.questions = questions;
}

/**
 * What the approver is shown of a call's gate, from its latest `approval.requested`: the reason, the
 * side-effect class, and the change or skill write the call waits to make.
 */
function gateOf(events: RunEvent[], callId: string): Pick<PendingApproval, "reason" | "sideEffect" | "change" | "skillWrite"> {
  const asked = events.findLast((event) => event.type === "approval.requested" && event.data.callId === callId);
  const { reason, sideEffect, change, skillWrite } = asked?.data ?? {};
  return {
    ...(typeof reason === "string" ? { reason } : {}),
    ...(typeof sideEffect === "string" ? { sideEffect } : {}),
    ...(change !== undefined ? { change } : {}),
    ...(isSkillWrite(skillWrite) ? { skillWrite } : {}),
  };
}

/** The `skillWrite` of an approval request as the skill write gate records it (an event's data is only JSON to the type system). */
function isSkillWrite(value: JsonValue | undefined): value is PendingSkillWrite & { [key: string]: JsonValue } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const { name, path, before, after, binding } = value;
  return typeof name === "string" && typeof path === "string" && typeof binding === "string" && (typeof before === "string" || before === null) && (typeof after === "string" || after === null);
}

/** A subagent run a paused run waits on, as describeRun describes it. */
export interface PausedChild {
  run: RunRecord;
  described: RunResult;
}

/**
 * The subagent runs a paused run waits on that wait themselves (not those that ended, nor one being driven
 * now), in the order they first paused: several spawned together (one call's `Promise.all`, or calls made
 * in parallel) can all be waiting at once.
 */
export async function pausedChildren(runs: RunStore, run: RunRecord): Promise<PausedChild[]> {
  const childRunIds = new Set((await runs.listEvents(run.id)).filter((event) => event.type === "subagent.waiting").map((event) => String(event.data.childRunId)));
  const children: PausedChild[] = [];
  for (const childRunId of childRunIds) {
    const child = await runs.getRun(childRunId);
    if (child?.status !== "waiting_approval" && child?.status !== "waiting_input") continue;
    children.push({ run: child, described: await describeRun(runs, child) });
  }
  return children;
}

/** The runs of `child` that wait: its own run, or the subagent runs below it that it waits on. */
export function waitingRunsOf(child: PausedChild): WaitedOnRun[] {
  const { run, described } = child;
  if (described.waitingOnAll) return described.waitingOnAll;
  return [{ runId: run.id, subagent: run.input.parent?.subagent ?? "", ...(described.pendingBudget ? { pendingBudget: described.pendingBudget } : {}) }];
}

/** A run paused because its subagents did: show every waiting child's pending decisions and questions as the parent's. */
async function surfaceChildren(runs: RunStore, run: RunRecord, result: RunResult): Promise<void> {
  const children = await pausedChildren(runs, run);
  if (children.length === 0) return;
  const approvals: PendingApproval[] = [];
  const questions: PendingQuestion[] = [];
  const waitedOn: WaitedOnRun[] = [];
  for (const child of children) {
    const { described } = child;
    const origin = { runId: described.waitingOn?.runId ?? child.run.id, subagent: described.waitingOn?.subagent ?? child.run.input.parent?.subagent ?? "" };
    waitedOn.push(...waitingRunsOf(child));
    // A call of a subagent further down keeps its own run and path.
    for (const call of described.pendingApprovals ?? []) approvals.push({ ...origin, ...call });
    for (const question of described.questions ?? []) questions.push({ ...origin, ...question });
  }
  const first = waitedOn[0]!;
  result.waitingOn = { runId: first.runId, subagent: first.subagent };
  result.waitingOnAll = waitedOn;
  if (approvals.length > 0) result.pendingApprovals = approvals;
  if (questions.length > 0) setQuestions(result, questions);
  // Approving the parent grows that child's budget: the approver must see which budget it is.
  if (first.pendingBudget) result.pendingBudget = first.pendingBudget;
}
