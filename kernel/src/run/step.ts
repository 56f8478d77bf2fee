import { AsyncLocalStorage } from "node:async_hooks";
import { AssemblyLineError, copyStateValue, isoTimestamp, type JsonValue, type NewRunEvent, type StepOptions } from "@assemblyline-agents/core";
import { findNonJson } from "../json-check.js";
import type { RunScope } from "./run-scope.js";

/**
 * Events an engine emits inside a step body (`model.response` inside the model
 * call's step): held here and committed in the same append as the step's
 * completion, so a crash between the two can neither lose them nor, on the
 * replay that re-runs the body, record them twice.
 */
const eventsOfStep = new AsyncLocalStorage<NewRunEvent[]>();
/**
 * Step bodies running now, in every run of the process. An enabled AsyncLocalStorage
 * makes Node run its hooks for every promise the process creates; it is disabled
 * whenever no body runs, so the runtime's own work between bodies pays nothing.
 */
let bodiesRunning = 0;

async function runBody<T>(held: NewRunEvent[], fn: () => T | Promise<T>): Promise<T> {
  bodiesRunning += 1;
  try {
    return await eventsOfStep.run(held, fn);
  } finally {
    bodiesRunning -= 1;
    if (bodiesRunning === 0) eventsOfStep.disable();
  }
}

/** Hold `event` for the step whose body is running, if any; false when no step body is running. */
export function holdForStep(event: NewRunEvent): boolean {
  const held = eventsOfStep.getStore();
  if (!held) return false;
  held.push(event);
  return true;
}

/** The prefix of the engine's step keys (`harness:model:1`): the run's other steps never use it. */
export const ENGINE_STEP_PREFIX = "harness:";

/**
 * Completed-step replay: a key that completed before in this run returns its
 * persisted result (recording `durable_step.replayed`) instead of running again.
 */
export async function runStep<T>(
  scope: RunScope,
  key: string,
  fn: () => T | Promise<T>,
  options: StepOptions = {},
  /** Runs only when the step will really execute, not on replay (budget checks). */
  beforeRunning?: () => Promise<void>,
  /** `hold`: commit the result with the run's next append (see RunJournal.hold); only for a body with no effect outside. */
  commit: { hold?: boolean } = {},
): Promise<T> {
  if (typeof key !== "string" || key === "") {
    throw new AssemblyLineError("AL_ERR_STEP_RESULT", "ctx.step(key, fn): key must be a non-empty string", {
      fix: "Use a key that identifies the substep within the run, e.g. `hydrate-customer:${id}`.",
    });
  }
  const own = scope.journal.ownWritesOf(scope.runId);
  const existing = own ? own.step(key) : await scope.runs.getStep(scope.runId, key);
  if (existing) {
    await scope.journal.record(scope.runId, "durable_step.replayed", { key, metadata: existing.metadata });
    return existing.result as T;
  }
  // Checked before the body runs: a refusal after it would leave its side effect done and unrecorded.
  const metadataProblem = options.metadata === undefined ? undefined : findNonJson(options.metadata, `ctx.step("${key}") metadata`);
  if (metadataProblem) {
    throw new AssemblyLineError("AL_ERR_STEP_RESULT", metadataProblem, {
      fix: "Pass plain JSON (objects, arrays, strings, finite numbers, booleans, null) as ctx.step's metadata.",
    });
  }
  await beforeRunning?.();
  // Recorded with the completion so telemetry can time the step in any process.
  const startedAt = isoTimestamp();
  const held: NewRunEvent[] = [];
  const result = await runBody(held, fn);
  const problem = findNonJson(result, `step "${key}" result`);
  if (problem) {
    throw new AssemblyLineError("AL_ERR_STEP_RESULT", problem, {
      fix: "Return plain JSON (objects, arrays, strings, finite numbers, booleans, null) from ctx.step bodies.",
    });
  }
  const metadata = (options.metadata ?? {}) as Record<string, JsonValue>;
  const events = [...held, { type: "durable_step.completed", data: { key, metadata, startedAt } }];
  const change = { step: { runId: scope.runId, key, result: result as JsonValue, metadata, createdAt: isoTimestamp() } };
  if (commit.hold) await scope.journal.hold(scope.runId, events, change);
  else await scope.journal.append(scope.runId, events, change);
  // The caller's copy: the change above may still be held, and must not move with it.
  return copyStateValue(result);
}
