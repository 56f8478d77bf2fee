import { AssemblyLineError, errorSummary } from "@assemblyline-agents/core";
import { isPausingStopOf } from "../run/budget.js";

/**
 * Abort reasons the spawner stops a child run with when its parent paused (its `maxDurationMs` under
 * `onExceeded: "pause"`, or its own parent's such pause passed down), each mapped to the child run it stops.
 * Only such a reason leaves a run resumable instead of failed: the parent's approved replay of the spawn drives
 * it on. Any other drive stopped by a caller's signal (a tool's `runtime.run({ signal: ctx.signal })`) fails.
 */
const PARENT_PAUSED = new WeakMap<object, string>();

/** Whether `reason` pauses run `runId` rather than ends it: its own pausing budget stop, or its parent's pause passed to it. */
export function pausesRun(reason: unknown, runId: string): reason is AssemblyLineError {
  return isPausingStopOf(reason, runId) || isParentPausedStopOf(reason, runId);
}

/** Whether `reason` is the stop the spawner gave subagent run `runId` because its parent paused (see PARENT_PAUSED). */
export function isParentPausedStopOf(reason: unknown, runId: string): boolean {
  return typeof reason === "object" && reason !== null && PARENT_PAUSED.get(reason) === runId;
}

/**
 * The stop of subagent run `childRunId` when its parent `parentRunId` paused with `cause`: the same code and
 * message as the cause (what a tool of the child sees on its ctx.signal), marked for the child alone.
 */
export function parentPausedStop(childRunId: string, parentRunId: string, cause: AssemblyLineError): AssemblyLineError {
  const stop = new AssemblyLineError(cause.code, errorSummary(cause), { ...(cause.fix ? { fix: cause.fix } : {}), cause, details: { ...cause.details, pausedRunId: parentRunId } });
  PARENT_PAUSED.set(stop, childRunId);
  return stop;
}

/** The signals tool calls' spawns stop with (spawningCallSignal), each with whether its call's execute still runs. */
const SPAWNING_CALLS = new WeakMap<AbortSignal, () => boolean>();

/**
 * The signal one tool call's spawns stop with: aborted with its run's signal, with the same reason, and known to
 * the spawner as this call's, so it can tell whether the call still executes when the run stops (`executing`).
 */
export function spawningCallSignal(runSignal: AbortSignal, executing: () => boolean): AbortSignal {
  const signal = AbortSignal.any([runSignal]);
  SPAWNING_CALLS.set(signal, executing);
  return signal;
}

/**
 * Whether the tool call a spawn's `turn` signal is of is still executing: a child it spawned in the background and
 * left running when it returned has no replay of the call to drive it on. A signal no call made is taken as running.
 */
export function spawningCallExecuting(turn: AbortSignal): boolean {
  return SPAWNING_CALLS.get(turn)?.() ?? true;
}
