// The ledger: a plain file outside the state store, appended (O_APPEND) by the
// chaos agent's tool and hook in every process. Its line order is the order the
// writes reached the file, so "an effect after the run completed" is visible.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** @returns {Array<{ kind: string, runId: string, callId?: string, key?: string, who: string, line: number }>} */
export function readLedger(path) {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((text, line) => {
      const [kind, runId, ...rest] = text.split(" ");
      if (kind === "completed") return { kind, runId, seq: rest[0].replace("seq=", ""), who: rest[1], line };
      const [callId, key, who] = rest;
      return { kind, runId, callId, key, who, line };
    });
}

/**
 * Whether the "external system" (an O_EXCL file per idempotency key, beside the ledger) applied `key`:
 * the truth the ledger's `effect` line reports, which a kill between the two can leave unwritten.
 */
function applied(ledgerPath, key) {
  return existsSync(join(`${ledgerPath}.keys`, createHash("sha256").update(key).digest("hex")));
}

/** The tool call an event belongs to: `callId` on the runtime's tool events, `toolCallId` on a tool's own (`ctx.emit`). */
function callOf(event) {
  return event.data?.callId ?? event.data?.toolCallId ?? "";
}

/**
 * Store events that executed a tool call again after its `tool.completed`: a `tool.called` or the
 * chaos tool's `effect.applying` (its fenced write) for a call the run had recorded as done. A replay
 * returns a completed call's recorded result; only a call interrupted before `tool.completed` runs
 * again. Events without a call id (none of the runtime's) count as the run's one call.
 */
function rerunsAfterCompletion(events) {
  const completedAt = new Map();
  const reruns = [];
  for (const event of events) {
    const call = callOf(event);
    if (event.type === "tool.completed" && !completedAt.has(call)) completedAt.set(call, event.seq);
    else if ((event.type === "tool.called" || event.type === "effect.applying") && event.seq > (completedAt.get(call) ?? Infinity)) reruns.push(event);
  }
  return reruns;
}

/**
 * Count losses and duplicates of one scenario.
 * @param {string} ledgerPath
 * @param {Set<string>} started run ids the scenario started (acknowledged, or found in the store)
 * @param {Map<string, { status: string, events: Array<{ seq: number, type: string }> }>} store what the state store says of each run
 */
export function audit(ledgerPath, started, store) {
  const entries = readLedger(ledgerPath);
  const byRun = new Map();
  for (const entry of entries) {
    if (!byRun.has(entry.runId)) byRun.set(entry.runId, []);
    byRun.get(entry.runId).push(entry);
    // A run the ledger saw is a started run, whatever the driver learned.
    started.add(entry.runId);
  }
  const figures = { started: started.size, completed: 0, lost: 0, duplicateCompletions: 0, duplicateEffects: 0, effectsAfterCompletion: 0, eventsAfterCompletion: 0, seqGaps: 0, callsRerunAfterCompletion: 0, effectsDeduped: 0, effectsUnlogged: 0, completionsUnlogged: 0, hookRedeliveries: 0, staleToolWakeups: 0 };
  const problems = [];
  for (const runId of started) {
    const lines = byRun.get(runId) ?? [];
    const record = store.get(runId);
    const effects = lines.filter((entry) => entry.kind === "effect");
    // What the external system applied for this run: each key its tool attempted (written before the
    // effect) that the system holds. A kill after the effect and before its ledger line leaves the
    // effect applied with no `effect` line, and the retry's line says `deduped`.
    const appliedKeys = [...new Set(lines.filter((entry) => entry.kind === "attempt").map((entry) => entry.key))].filter((key) => applied(ledgerPath, key));
    const loggedKeys = new Set(effects.map((entry) => entry.key));
    figures.effectsUnlogged += appliedKeys.filter((key) => !loggedKeys.has(key)).length;
    const completions = lines.filter((entry) => entry.kind === "completed");
    // Hooks are delivered at least once (a replica that finds a run finished delivers what
    // was not yet marked observed): the same event (same seq) twice is a redelivery; a
    // second completion is a second run.completed event, with a seq of its own.
    const completionEvents = new Set(completions.map((entry) => entry.seq));
    figures.hookRedeliveries += completions.length - completionEvents.size;
    const firstCompletion = completions[0]?.line ?? Infinity;
    const events = record?.events ?? [];
    const storeCompletions = events.filter((event) => event.type === "run.completed").length;
    figures.effectsDeduped += lines.filter((entry) => entry.kind === "deduped").length;
    if (record?.status === "completed" && appliedKeys.length >= 1) figures.completed += 1;
    else {
      figures.lost += 1;
      const history = lines.map((entry) => (entry.kind === "completed" ? `completed seq=${entry.seq} by ${entry.who}` : `${entry.kind} by ${entry.who}`)).join(", ");
      const stored = (record?.events ?? []).map((event) => event.type).join(", ");
      problems.push(`lost: ${runId} is ${record?.status ?? "missing from the store"} with ${appliedKeys.length} effect(s) applied (ledger: ${history || "nothing"}; events: ${stored || "none"})`);
    }
    if (completionEvents.size > 1 || storeCompletions > 1) {
      figures.duplicateCompletions += 1;
      problems.push(`duplicate completion: ${runId} completed ${completionEvents.size} time(s) in the ledger, ${storeCompletions} run.completed event(s) (${completions.map((entry) => `seq ${entry.seq} by ${entry.who}`).join(", ")})`);
    }
    if (record?.status === "completed" && completions.length === 0) figures.completionsUnlogged += 1;
    // The system applies each key once, so a second effect is the call run under a second key.
    if (appliedKeys.length > 1) {
      figures.duplicateEffects += appliedKeys.length - 1;
      problems.push(`duplicate side effect: ${runId} applied under ${appliedKeys.length} keys (${appliedKeys.join(", ")})`);
    }
    // A process frozen after its last fenced write can wake after the run completed
    // elsewhere and finish what it was doing: fencing cannot reach into a tool already past
    // its check. What it must not do is write to the run (eventsAfterCompletion) or apply
    // the effect again: its repeat reaches the external system under the same key (deduped).
    const late = lines.filter((entry) => entry.kind !== "completed" && entry.line > firstCompletion);
    figures.staleToolWakeups += late.filter((entry) => entry.kind !== "effect").length;
    const lateEffects = late.filter((entry) => entry.kind === "effect");
    if (lateEffects.length > 0) {
      figures.effectsAfterCompletion += lateEffects.length;
      problems.push(`effect applied after completion: ${runId}: ${lateEffects.map((entry) => `by ${entry.who}`).join(", ")}`);
    }
    // The store's view of the same fault: nothing may be written to a run after its completion.
    const completedAt = events.find((event) => event.type === "run.completed")?.seq ?? Infinity;
    const after = events.filter((event) => event.seq > completedAt);
    if (after.length > 0) {
      figures.eventsAfterCompletion += after.length;
      problems.push(`written after completion: ${runId}: ${after.map((event) => `${event.type} (seq ${event.seq})`).join(", ")}`);
    }
    // A dedupe is safe only for a call killed before its tool.completed: after it, the runtime must
    // return the recorded result, and a re-run is finished work done again, whatever the key saved.
    const reruns = rerunsAfterCompletion(events);
    if (reruns.length > 0) {
      figures.callsRerunAfterCompletion += reruns.length;
      problems.push(`tool call re-run after it completed: ${runId}: ${reruns.map((event) => `${event.type} (seq ${event.seq}) for ${callOf(event) || "its call"}`).join(", ")}`);
    }
    if (events.some((event, index) => event.seq !== index + 1)) {
      figures.seqGaps += 1;
      problems.push(`event log not contiguous: ${runId}`);
    }
  }
  // A scenario that started or completed nothing proved nothing (runs started and none completed are reported lost).
  if (figures.started === 0) problems.push("nothing was checked: no run was started");
  const failed =
    figures.started === 0 ||
    figures.completed === 0 ||
    figures.lost + figures.duplicateCompletions + figures.duplicateEffects + figures.effectsAfterCompletion + figures.eventsAfterCompletion + figures.seqGaps + figures.callsRerunAfterCompletion > 0;
  return { figures, problems, failed };
}

/** The runs `who` has started its side effect for (an attempt) and not yet applied. */
export function runsMidCall(ledgerPath, who) {
  const open = new Set();
  for (const entry of readLedger(ledgerPath)) {
    if (entry.who !== who) continue;
    if (entry.kind === "attempt") open.add(entry.runId);
    else if (entry.kind === "effect" || entry.kind === "deduped") open.delete(entry.runId);
  }
  return [...open];
}
