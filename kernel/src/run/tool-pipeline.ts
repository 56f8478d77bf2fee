import {
  AssemblyLineError,
  isAssemblyLineError,
  type JsonValue,
  type ModelToolCall,
  type ToolCallOutcome,
  type ToolCallRecord,
  isoTimestamp,
  storableText,
} from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";
import { jsonWithoutUndefinedKeys } from "../json-check.js";
import { describeSchemaErrors } from "../schema.js";
import { reachableThroughBridge, runBridgeTool, unreachableReason, unwrapToolCall } from "./bridge-tools.js";
import { isInfrastructureFailure, leaseLost } from "./infrastructure-failure.js";
import { approvalRequestOf, isChangeApprovalSuspension, type ChangeApprovalSuspension } from "./change-approval.js";
import { isQuestionSuspension, type QuestionSuspension } from "./question.js";
import { isParentPausedStopOf } from "../subagents/parent-paused.js";
import { isSubagentSuspension, type SubagentSuspension } from "../subagents/suspension.js";
import { isSkillApprovalSuspension } from "../skills/write-approval.js";
import type { RunScope } from "./run-scope.js";
import { createToolContext, type CallAsks } from "./tool-context.js";
import { declaredSideEffect, type ToolTableEntry } from "./tool-table.js";

/** An approval is bound to the run, the call and the exact input. */
export function approvalIdFor(runId: string, callId: string, inputDigest: string): string {
  return `appr_${digestJson([runId, callId, inputDigest]).slice(0, 32)}`;
}

/**
 * The approval id of one gate of a call: the tool's own (nothing `shown`), or one its execution reached after
 * it, bound to what that gate shows too. Approving one gate, twice even, never passes another of the same call;
 * the same gate reached again (a replay after a crash) has the same id.
 */
function gateApprovalIdFor(runId: string, callId: string, inputDigest: string, shown: JsonValue | undefined): string {
  return shown === undefined ? approvalIdFor(runId, callId, inputDigest) : `appr_${digestJson([runId, callId, inputDigest, shown]).slice(0, 32)}`;
}

/** What a gate after the tool's own shows the approver, from its `approval.requested` data: the change, or the skill write (by its binding). */
function shownBy(data: Readonly<Record<string, JsonValue | undefined>>): JsonValue | undefined {
  if (data.change !== undefined) return { change: data.change };
  const skillWrite = data.skillWrite;
  if (typeof skillWrite === "object" && skillWrite !== null && !Array.isArray(skillWrite)) return { skillWrite: skillWrite.binding ?? null };
  return undefined;
}

/** The gate an approved call passed, when its approval was given for this very input: with the change it showed, if any. */
interface PassedGate {
  change?: JsonValue;
}

/**
 * The gate `record`'s approval passed, or undefined when that approval was not for `inputDigest` (the engine
 * asked the call again with other input: it is gated again). The approval is checked against the id of the
 * gate it was given for, as shown in the call's `approval.requested`.
 */
async function passedGateOf(scope: RunScope, record: ToolCallRecord, inputDigest: string): Promise<PassedGate | undefined> {
  if (!record.approvalId) return undefined;
  // The tool's own gate, the usual one, needs no read of the run's events.
  if (record.approvalId === approvalIdFor(scope.runId, record.callId, inputDigest)) return {};
  const requested = approvalRequestOf(await scope.runs.listEvents(scope.runId), record.callId, record.approvalId);
  if (!requested) return undefined;
  const shown = shownBy(requested.data);
  if (shown === undefined || gateApprovalIdFor(scope.runId, record.callId, inputDigest, shown) !== record.approvalId) return undefined;
  return requested.data.change !== undefined ? { change: requested.data.change } : {};
}

/**
 * The tool pipeline: resolve (tool_call unwrapped into the call it names) ->
 * policy -> input schema -> approval gate -> execute -> JSON/output checks ->
 * persist -> model projection. A call that completed before returns its
 * persisted result and is never executed again.
 */
export async function callTool(scope: RunScope, requested: ModelToolCall): Promise<ToolCallOutcome> {
  // tool_call takes the pipeline as the call it names (bridge-tools.ts).
  const unwrapped = unwrapToolCall(scope, requested);
  const refusal = "refusal" in unwrapped ? unwrapped.refusal : null;
  const { call, via } = "refusal" in unwrapped ? { call: requested, via: null } : unwrapped;
  const viaField: Record<string, JsonValue> = via ? { via } : {};
  const inputDigest = digestJson(call.input);
  const own = scope.journal.ownWritesOf(scope.runId);
  const existing = own ? own.toolCall(call.id) : await scope.runs.getToolCall(scope.runId, call.id);
  if (existing && (existing.toolName !== call.name || (existing.inputDigest !== inputDigest && existing.status !== "approved"))) {
    // A replay must ask for the same call; a different one under a used id would get a stale result.
    throw new AssemblyLineError("AL_ERR_TOOL_CALL_ID_REUSED", `tool call id ${call.id} of run ${scope.runId} was ${existing.toolName} with other input; the engine reused it for ${call.name}`, {
      fix: "Engines must give every tool call of a run its own id, and repeat a call exactly on replay.",
    });
  }
  if (existing) {
    const settled = await settledOutcome(scope, existing);
    if (settled) return settled;
  }
  // Only a call new to the run counts: a replay or a decided approval was counted when first made.
  if (!existing) await scope.budget.beforeToolCall();
  if (refusal) return recoverable(scope, call, inputDigest, "tool.input_invalid", refusal);

  const entry = scope.table.get(call.name);
  const offered = entry && (via ? reachableThroughBridge(scope, entry) : scope.visible.has(call.name));
  if (entry && !offered && entry.mode !== "disabled" && unreachableReason(entry)) {
    return recoverable(scope, call, inputDigest, "tool.disabled", { error: unreachableReason(entry)! });
  }
  if (!entry || (!offered && entry.mode !== "disabled")) {
    const available = [...scope.visible].sort().join(", ") || "none";
    const discovery = scope.visible.has("tool_search") ? " More tools can be found with tool_search." : "";
    return recoverable(scope, call, inputDigest, "tool.input_invalid", {
      error: `Unknown tool "${call.name}". Available tools: ${available}.${discovery}`,
    });
  }
  if (entry.mode === "disabled") {
    return recoverable(scope, call, inputDigest, "tool.disabled", {
      error: `Tool "${call.name}" is disabled by the host's tool policy.`,
    });
  }
  if (!entry.validateInput(call.input)) {
    const problems = describeSchemaErrors(entry.validateInput.errors);
    return recoverable(scope, call, inputDigest, "tool.input_invalid", {
      error: `Invalid input for ${call.name}: ${problems.join("; ")}. Call it again with input matching its schema.`,
      problems,
    });
  }

  // A host that gated tool_call gates every call made through it, as it would gate each of those tools.
  const gate = entry.approval || (via ? bridgeGate(scope, entry) : false);
  const passed = existing?.status === "approved" ? await passedGateOf(scope, existing, inputDigest) : undefined;
  if (gate && !passed) {
    const approvalId = approvalIdFor(scope.runId, call.id, inputDigest);
    const record = newRecord(scope, call, inputDigest, "waiting_approval", { approvalId });
    await scope.journal.append(
      scope.runId,
      [
        { type: "tool.called", data: { callId: call.id, toolName: call.name, input: call.input, ...viaField } },
        {
          type: "approval.requested",
          data: { approvalId, callId: call.id, toolName: call.name, input: call.input, reason: gate.reason, sideEffect: gate.sideEffect, ...viaField },
        },
      ],
      // The run stays `running` until the engine has ended its turn and the checkpoint is written.
      { toolCall: record },
    );
    scope.pausedFor ??= "approval";
    return { status: "paused", reason: "approval" };
  }

  // An interrupted call (status "requested") runs again: idempotency keys make that safe. The call's later
  // writes build on the record written here, so its createdAt stays the time the call was recorded.
  let recorded = existing;
  if (!recorded || (recorded.status !== "approved" && recorded.status !== "requested")) {
    recorded = newRecord(scope, call, inputDigest, "requested");
    await scope.journal.record(scope.runId, "tool.called", { callId: call.id, toolName: call.name, input: call.input, ...viaField }, { toolCall: recorded });
  }
  return execute(scope, entry, call, inputDigest, passed, recorded);
}

/** The gate of tool_call itself (coreToolPolicy `tool_call: "approval"`), for a call made through it; with the called tool's side effect. */
function bridgeGate(scope: RunScope, target: ToolTableEntry): ToolTableEntry["approval"] {
  const bridge = scope.table.get("tool_call")?.approval;
  return bridge ? { reason: bridge.reason, sideEffect: declaredSideEffect(target.definition) ?? "external" } : false;
}

/** What an already-recorded call resolves to without executing; undefined when it must (re)execute. */
async function settledOutcome(scope: RunScope, record: ToolCallRecord): Promise<ToolCallOutcome | undefined> {
  switch (record.status) {
    case "completed":
      if (record.question === null) {
        await scope.journal.record(scope.runId, "tool.replayed", { callId: record.callId, toolName: record.toolName });
      }
      return { status: "completed", output: record.modelOutput, isError: isErrorShaped(record.modelOutput) };
    case "denied":
      return { status: "completed", output: record.modelOutput, isError: true };
    case "failed":
      scope.failure ??= { code: "AL_ERR_TOOL_FAILED", message: record.error ?? `tool ${record.toolName} failed` };
      return { status: "failed", output: { error: record.error ?? "tool failed" } };
    case "waiting_approval":
      scope.pausedFor ??= "approval";
      return { status: "paused", reason: "approval" };
    case "waiting_input":
      scope.pausedFor ??= "input";
      return { status: "paused", reason: "input" };
    default:
      return undefined;
  }
}

/** Pause the call for a person's decision, recorded as `approval.requested` bound to the exact input. */
async function pauseForApproval(
  scope: RunScope,
  call: ModelToolCall,
  inputDigest: string,
  base: ToolCallRecord,
  details: Record<string, JsonValue>,
): Promise<ToolCallOutcome> {
  // Its own id: a decision sent for a gate before it (the tool's own, shown no change) cannot pass this one.
  const approvalId = gateApprovalIdFor(scope.runId, call.id, inputDigest, shownBy(details));
  await scope.journal.record(
    scope.runId,
    "approval.requested",
    { approvalId, callId: call.id, toolName: call.name, input: call.input, ...details },
    { toolCall: { ...base, status: "waiting_approval", approvalId, updatedAt: isoTimestamp() } },
  );
  scope.pausedFor ??= "approval";
  return { status: "paused", reason: "approval" };
}

async function execute(
  scope: RunScope,
  entry: ToolTableEntry,
  call: ModelToolCall,
  inputDigest: string,
  /** The approval gate the call passed, if it was approved. */
  passed: PassedGate | undefined,
  /** The call's stored record, which every later write of it builds on. */
  base: ToolCallRecord,
): Promise<ToolCallOutcome> {
  const asked: CallAsks = {};
  // What the person saw decides what goes through.
  const ctx = createToolContext(scope, call, passed !== undefined, asked, passed?.change);
  let returned: unknown;
  try {
    returned = entry.bridge ? await runBridgeTool(scope, entry, call.input) : await unlessRunStops(scope.signal, asked, () => entry.definition.execute(call.input, ctx));
    if (asked.question) throw asked.question;
    if (asked.subagent) throw asked.subagent;
    if (asked.approval) throw asked.approval;
  } catch (error) {
    if (isInfrastructureFailure(error)) throw error;
    if (asked.stopped !== undefined && error === asked.stopped) return stopped(scope, base, call, error);
    // A change a run-time API makes (an automation, a connection) waits for a person, like a gated tool.
    const approval = isChangeApprovalSuspension(error) ? error : asked.approval;
    if (approval) return pauseForApproval(scope, call, inputDigest, base, { reason: approval.reason, sideEffect: "external", change: approval.change });
    // selfImprovement.writeApproval: pause for an approval of exactly this skill change.
    if (isSkillApprovalSuspension(error)) return pauseForApproval(scope, call, inputDigest, base, { reason: error.reason, sideEffect: "idempotent", skillWrite: error.data });
    const waitingOnChild = isSubagentSuspension(error) ? error : asked.subagent;
    if (waitingOnChild && !isQuestionSuspension(error)) {
      // The call stays open (status requested): when the child finishes, the parent resumes and
      // repeats it, and the spawn finds the finished child instead of starting another.
      scope.pausedFor ??= waitingOnChild.reason;
      return { status: "paused", reason: waitingOnChild.reason };
    }
    const question = isQuestionSuspension(error) ? error : asked.question;
    if (question) {
      const asking = { question: question.question, choices: question.options?.choices ?? null, metadata: question.options?.metadata ?? null } as JsonValue;
      await scope.journal.record(
        scope.runId,
        "input.requested",
        // The metadata goes with the question to the channel, as the question record keeps it (left out when none).
        { callId: call.id, toolName: call.name, question: question.question, choices: question.options?.choices, metadata: question.options?.metadata },
        { toolCall: { ...base, status: "waiting_input", question: asking, updatedAt: isoTimestamp() } },
      );
      scope.pausedFor ??= "input";
      return { status: "paused", reason: "input" };
    }
    return fail(scope, base, call, error);
  }

  // Another replica took the run over while the tool ran: its journal decides, not this result.
  if (scope.lease.lost) throw leaseLost(scope.runId);
  // A key left undefined (an optional field the tool had no value for) is left out, as JSON leaves it.
  const checked = jsonWithoutUndefinedKeys(returned, `${call.name} result`);
  if ("problem" in checked) {
    return fail(scope, base, call, new AssemblyLineError("AL_ERR_TOOL_OUTPUT", `tool ${call.name} returned a value that is not JSON-serializable: ${checked.problem}`, {
      fix: "Return plain JSON from execute (convert Dates, Maps, class instances and bigints).",
    }));
  }
  const output = checked.json;
  // A refusal the tool returned for the model (the spec's advice over throwing) reaches it as it is: the
  // outputSchema and toModelOutput describe the tool's result, not its refusals.
  if (isErrorShaped(output)) return completed(scope, base, call, output, output);
  if (entry.validateOutput && !entry.validateOutput(output)) {
    const problems = describeSchemaErrors(entry.validateOutput.errors).map((line) => line.replace(/^input/, "output"));
    return fail(scope, base, call, new AssemblyLineError("AL_ERR_TOOL_OUTPUT", `tool ${call.name} broke its outputSchema: ${problems.join("; ")}`, {
      fix: "Make execute return what outputSchema declares, or correct the schema.",
    }));
  }
  if (!entry.definition.toModelOutput) return completed(scope, base, call, output, output);
  // From here the result is valid: a projection that fails still leaves it recorded with the failed call.
  let projected: unknown;
  try {
    projected = entry.definition.toModelOutput(output);
  } catch (error) {
    return fail(scope, base, call, error, output);
  }
  if (isPromiseLike(projected)) {
    // Nothing waits for it: its rejection must not surface as an unhandled one.
    Promise.resolve(projected).catch(() => undefined);
    return fail(scope, base, call, new AssemblyLineError("AL_ERR_TOOL_OUTPUT", `tool ${call.name}: toModelOutput returned a Promise; it must return the projection itself`, {
      fix: "Write toModelOutput as a synchronous function, `toModelOutput(output) { return { ... }; }`: no async, no await.",
    }), output);
  }
  const projection = jsonWithoutUndefinedKeys(projected, `${call.name} toModelOutput`);
  if ("problem" in projection) {
    return fail(scope, base, call, new AssemblyLineError("AL_ERR_TOOL_OUTPUT", projection.problem, { fix: "Return plain JSON from toModelOutput." }), output);
  }
  return completed(scope, base, call, output, projection.json);
}

/** The call's result persisted in full, with what the model is shown of it. */
async function completed(scope: RunScope, base: ToolCallRecord, call: ModelToolCall, output: JsonValue, modelOutput: JsonValue): Promise<ToolCallOutcome> {
  await scope.journal.record(
    scope.runId,
    "tool.completed",
    { callId: call.id, toolName: call.name, output, modelOutput },
    { toolCall: { ...base, status: "completed", output, modelOutput, updatedAt: isoTimestamp() } },
  );
  return { status: "completed", output: modelOutput, isError: isErrorShaped(modelOutput) };
}

/**
 * The tool's result, unless the run's signal aborts first (maxDurationMs reached, the caller cancelled, a tool
 * beside it failed, the lease was lost): then the abort's reason is thrown at once, and `asked.stopped` holds it,
 * so a tool that never returns cannot hold the run, its lease and its slot. What the tool does later is never recorded.
 */
function unlessRunStops<T>(signal: AbortSignal, asked: CallAsks, execute: () => T | Promise<T>): Promise<T> {
  const work = (async () => execute())();
  const returned = () => {
    asked.returned = true;
  };
  work.then(returned, returned);
  const stop = () => {
    asked.stopped = signal.reason;
    // The tool's late end, a throw included, has no one waiting for it.
    work.catch(() => undefined);
    return Promise.reject(signal.reason);
  };
  if (signal.aborted) return stop();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => stop().catch(reject);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * A call the run stopped waiting for (unlessRunStops): recorded failed, with the code of what stopped it. The run's
 * end is not this call's to decide: the budget, a failed tool beside it, or the caller's abort decides it.
 * A budget that pauses the run (`onExceeded: "pause"`) stopped it mid-way instead: the call is left as recorded
 * when it started, as a crash leaves it, so approving the pause runs it again (at least once, its idempotency
 * keys the same) and the run goes on from where it stopped. So is a call of a subagent the spawner stopped
 * because its parent paused (parent-paused.ts), each level down: its run is driven on by the approved replay of
 * the spawn. Any other abort, a caller's signal carrying another run's budget stop included, fails the call.
 */
async function stopped(scope: RunScope, base: ToolCallRecord, call: ModelToolCall, reason: unknown): Promise<ToolCallOutcome> {
  const message = storableText(`tool ${call.name} was stopped before it returned: ${reason instanceof Error ? reason.message : String(reason)}`);
  const code = isAssemblyLineError(reason) ? reason.code : undefined;
  const pausedOnBudget = code === "AL_ERR_BUDGET_EXCEEDED" && scope.budget.exceeded !== null && scope.budget.pausesWhenExceeded;
  if (!pausedOnBudget && !isParentPausedStopOf(reason, scope.runId)) {
    await scope.journal.record(
      scope.runId,
      "tool.execution_failed",
      { callId: call.id, toolName: call.name, error: message, code },
      { toolCall: { ...base, status: "failed", error: message, updatedAt: isoTimestamp() } },
    );
  }
  return { status: "failed", output: { error: message } };
}

/** The call recorded failed, failing the run; `output`, a valid result whose projection failed, stays recorded with it. */
async function fail(scope: RunScope, base: ToolCallRecord, call: ModelToolCall, error: unknown, output?: JsonValue): Promise<ToolCallOutcome> {
  // Recorded with the call: text every store can hold (PostgreSQL refuses NUL and lone surrogates).
  const message = storableText(error instanceof Error ? error.message : String(error));
  const code = isAssemblyLineError(error) ? error.code : undefined;
  // The error's class (TypeError, a tool's own) for a failure without a code: what telemetry's error.type reports.
  const errorClass = code === undefined && error instanceof Error && typeof error.name === "string" && error.name !== "" ? storableText(error.name) : undefined;
  await scope.journal.record(
    scope.runId,
    "tool.execution_failed",
    { callId: call.id, toolName: call.name, error: message, code, errorClass, output },
    { toolCall: { ...base, status: "failed", error: message, output: output ?? null, updatedAt: isoTimestamp() } },
  );
  scope.failure ??= { code: code ?? "AL_ERR_TOOL_FAILED", message: `tool ${call.name} failed: ${message}` };
  return { status: "failed", output: { error: message } };
}

/** A refusal the model can recover from: recorded, persisted as the call's result, never executed. */
async function recoverable(
  scope: RunScope,
  call: ModelToolCall,
  inputDigest: string,
  eventType: "tool.input_invalid" | "tool.disabled",
  result: { error: string; problems?: string[] },
): Promise<ToolCallOutcome> {
  const output = result as unknown as JsonValue;
  await scope.journal.record(
    scope.runId,
    eventType,
    { callId: call.id, toolName: call.name, input: call.input, ...result },
    { toolCall: { ...newRecord(scope, call, inputDigest, "completed"), output, modelOutput: output } },
  );
  return { status: "completed", output, isError: true };
}

function newRecord(
  scope: RunScope,
  call: ModelToolCall,
  inputDigest: string,
  status: ToolCallRecord["status"],
  extra: Partial<ToolCallRecord> = {},
): ToolCallRecord {
  const time = isoTimestamp();
  return {
    runId: scope.runId,
    callId: call.id,
    toolName: call.name,
    input: call.input,
    inputDigest,
    status,
    output: null,
    modelOutput: null,
    error: null,
    approvalId: null,
    question: null,
    createdAt: time,
    updatedAt: time,
    ...extra,
  };
}

/**
 * A result that carries an error (`{ error: "Run validate first." }`): a refusal the tool returned for the model
 * to recover from. An `error` of null or false is a result saying there was none.
 */
function isErrorShaped(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const error = (value as Record<string, unknown>).error;
  return Object.hasOwn(value, "error") && error !== undefined && error !== null && error !== false;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}
