import type { CaptureContent, JsonValue, RunEvent, RunRecord, ToolCallRecord } from "@assemblyline-agents/core";
import { captureBody, capturesBodies, type OpenEveRuntime, type PendingQuestion, type PendingSkillWrite } from "@assemblyline-agents/runtime";
import { skillWriteAction } from "../../skill-write-action.js";

/** A body as the inspector may show it: null when captureContent keeps bodies out. */
type Body = string | null;

/**
 * What one view carries at most, newest kept: the page refetches the view on every event, so a
 * run with 100 000 events must not cost megabytes each time. The rest is at /runs/:id/events.
 */
const TIMELINE_LIMIT = 500;
const TOOL_CALLS_LIMIT = 200;
const STEPS_LIMIT = 200;
/** Free text (errors, questions, reasons, step keys) that a tool, hook or model may make huge. */
const TEXT_LIMIT = 2_000;

export interface RunSummaryView {
  id: string;
  status: RunRecord["status"];
  conversationId: string | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * One run as the inspector page shows it. Message bodies and tool
 * input/output pass through the same captureContent rules as telemetry
 * (redacted, truncated, or left out under usage/off); under usage/off the
 * run's error message and the pending question's text are null too (the
 * error's code and the question's call id stay, so it can still be answered).
 */
export async function runView(runtime: OpenEveRuntime, runId: string, mode: CaptureContent) {
  const runs = runtime.state.runs;
  const result = await runtime.getRun(runId);
  const [run, events, toolCalls, usage] = await Promise.all([
    runs.getRun(runId),
    runs.listEvents(runId),
    runs.listToolCalls(runId),
    runtime.state.usage.listUsage({ runId }).catch(() => []),
  ]);
  const body = (value: JsonValue | undefined): Body => (capturesBodies(mode) && value !== undefined ? captureBody(value, mode) : null);
  // Free text a model, tool or person wrote (an error's message, a question): shown only where bodies are,
  // as telemetry shows error messages only from `content` on. Codes and names are shown in every mode.
  const text = (value: string): Body => (capturesBodies(mode) ? cut(value) : null);
  const questionView = (question: PendingQuestion) => ({
    callId: question.callId,
    runId: question.runId ?? null,
    subagent: question.subagent ?? null,
    toolName: question.toolName,
    question: text(questionText(question.question)),
  });
  const eventCost = events.reduce((sum, event) => sum + costOf(event), 0);
  const steps = events.filter((event) => event.type === "durable_step.completed" || event.type === "durable_step.replayed");
  return {
    captureContent: mode,
    run: { ...summary(run!), agentRevision: run!.agentRevision, modelSpec: cut(run!.modelSpec), error: run!.error ? { ...run!.error, message: text(run!.error.message) } : run!.error },
    message: body(run!.input.message),
    response: result.response ? body(result.response.text) : null,
    // Each with what names it alone: two subagents' calls may share a call id, never an approvalId, and runId tells them apart too.
    pendingApprovals: (result.pendingApprovals ?? []).map((pending) => ({
      approvalId: pending.approvalId,
      callId: pending.callId,
      runId: pending.runId ?? null,
      subagent: pending.subagent ?? null,
      toolName: pending.toolName,
      input: body(pending.input),
      reason: pending.reason !== undefined ? cut(pending.reason) : approvalReason(events, pending.callId),
      // What the approval lets through: a body, like the call's input (its automation's message, a connection's target).
      change: pending.change !== undefined ? body(pending.change) : null,
      skillWrite: pending.skillWrite ? skillWriteView(pending.skillWrite, body) : null,
    })),
    // A run paused on a budget (onExceeded: "pause"): approve grows it, deny fails the run; neither names a call.
    pendingBudget: result.pendingBudget ? { budget: result.pendingBudget.budget, used: result.pendingBudget.used, limit: result.pendingBudget.limit } : null,
    // Every budget it waits on: its own (runId null), or those of the subagent runs it waits on, each decided by its runId.
    pendingBudgets: result.waitingOnAll
      ? result.waitingOnAll.flatMap(({ runId, subagent, pendingBudget }) => (pendingBudget ? [{ budget: pendingBudget.budget, used: pendingBudget.used, limit: pendingBudget.limit, runId, subagent }] : []))
      : result.pendingBudget
        ? [{ budget: result.pendingBudget.budget, used: result.pendingBudget.used, limit: result.pendingBudget.limit, runId: null, subagent: null }]
        : [],
    // Every question waiting (an engine's parallel calls, several subagents), `question` the first of them.
    question: result.question ? questionView(result.question) : null,
    questions: (result.questions ?? (result.question ? [result.question] : [])).map(questionView),
    timelineTotal: events.length,
    timeline: events.slice(-TIMELINE_LIMIT).map((event) => ({ seq: event.seq, at: event.createdAt, type: event.type, detail: cut(detail(event)) })),
    toolCallsTotal: toolCalls.length,
    toolCalls: toolCalls.slice(-TOOL_CALLS_LIMIT).map((call) => toolCallView(call, body)),
    stepsTotal: steps.length,
    steps: steps.slice(-STEPS_LIMIT).map((event) => ({ seq: event.seq, key: cut(String(event.data.key)), replayed: event.type === "durable_step.replayed", at: event.createdAt })),
    usage: {
      inputTokens: usage.reduce((sum, record) => sum + record.inputTokens, 0),
      outputTokens: usage.reduce((sum, record) => sum + record.outputTokens, 0),
      costUsd: usage.length > 0 ? usage.reduce((sum, record) => sum + record.costUsd, 0) : eventCost,
      modelCalls: events.filter((event) => event.type === "model.response").length,
    },
  };
}

export function summary(run: RunRecord): RunSummaryView {
  return { id: run.id, status: run.status, conversationId: run.conversationId, createdAt: run.createdAt, updatedAt: run.updatedAt };
}

/**
 * A pending skill write: which file of which skill, and what it does to it, shown in every mode (names, as a
 * tool's name is); the text it would write is a body (null where bodies are left out).
 */
function skillWriteView(write: PendingSkillWrite, body: (value: JsonValue | undefined) => Body) {
  return {
    name: cut(write.name),
    path: cut(write.path),
    action: skillWriteAction(write),
    proposed: write.proposed ? body(write.proposed) : null,
  };
}

function toolCallView(call: ToolCallRecord, body: (value: JsonValue | undefined) => Body) {
  return {
    callId: call.callId,
    toolName: call.toolName,
    status: call.status,
    input: body(call.input),
    output: call.output === null ? null : body(call.output),
    error: call.error === null ? null : body(call.error),
    createdAt: call.createdAt,
    updatedAt: call.updatedAt,
  };
}

/** Names and ids only: what a line may show whatever the capture mode. */
function detail(event: RunEvent): string {
  const data = event.data;
  const parts = [data.toolName, data.key, data.callId !== undefined ? `call ${String(data.callId)}` : undefined, data.code, data.model ?? data.modelSpec]
    .filter((part) => typeof part === "string" && part !== "")
    .map(String);
  return parts.join(" · ");
}

function approvalReason(events: RunEvent[], callId: string): string | null {
  const requested = events.find((event) => event.type === "approval.requested" && event.data.callId === callId);
  return typeof requested?.data.reason === "string" ? cut(requested.data.reason) : null;
}

function questionText(question: JsonValue): string {
  if (typeof question === "string") return question;
  if (question && typeof question === "object" && !Array.isArray(question) && typeof question.question === "string") return question.question;
  return JSON.stringify(question);
}

function costOf(event: RunEvent): number {
  if (event.type !== "model.response") return 0;
  const usage = event.data.usage;
  return usage && typeof usage === "object" && !Array.isArray(usage) && typeof usage.costUsd === "number" ? usage.costUsd : 0;
}

function cut(text: string): string {
  return text.length <= TEXT_LIMIT ? text : `${text.slice(0, TEXT_LIMIT)}…[truncated ${text.length - TEXT_LIMIT} chars]`;
}
