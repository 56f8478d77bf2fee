import { AssemblyLineError, TERMINAL_RUN_STATUSES, isLeaseFree, type RunRecord, type RunStore, type RuntimeLogger } from "@assemblyline-agents/core";
import { failedOnDeniedPause } from "../run/budget.js";
import type { RunDriver } from "../run/run-driver.js";
import type { RunResult } from "../run/run-result.js";
import { childRunIdFor } from "./spawner.js";

/**
 * Subagent runs left part-way (`running` or `queued` with no drive: what a crash, or their parent's
 * `maxDurationMs` pause, leaves), or resting on a decision (`waiting_approval`, `waiting_input`: a recovery
 * sweep drove one on while its parent waited, or it paused on its own budget), under a parent that has ended:
 * nothing will take their output, so they are failed instead of driven on, or approved into spending again,
 * for nothing.
 */
export interface LeftRunParts {
  runs: RunStore;
  logger: RuntimeLogger;
  /** The driver of the build a run continues on (RevisionDrivers.driverFor). */
  driverFor(run: RunRecord): Promise<{ driver: RunDriver }>;
  /** Release what a failed run holds (its own sandbox), as the end of its drive would have. */
  releaseHeld(run: RunRecord): Promise<void>;
}

/** What became of a left run: failed here, found ended (left as it ended), or driven by another process (left to it). */
export type LeftRunOutcome = "failed" | "ended" | "leased";

/**
 * Fail `run` with `error` if it is still left part-way or waits for a decision, under its own lease as any
 * failure is written: a run another process holds now is left to that process, one that ended is left as it ended.
 * What it holds is released by failLeftSubtree, once the runs below it are dealt with.
 */
export async function failLeftRun(parts: LeftRunParts, run: RunRecord, error: AssemblyLineError): Promise<{ outcome: LeftRunOutcome; result: RunResult }> {
  const { driver } = await parts.driverFor(run);
  // Set by beforeDriving, which runs only if this process takes the run's lease.
  let outcome = undefined as LeftRunOutcome | undefined;
  const result = await driver.drive(run.id, {
    // Not a decision: a run that ended, or that another process holds, is described instead of refused.
    leaveIfTaken: true,
    beforeDriving: async (current) => {
      if (!unfinished(current)) {
        outcome = "ended";
        return false;
      }
      await driver.failRun(current.id, error, error.code);
      outcome = "failed";
      return false;
    },
  });
  return { outcome: outcome ?? (TERMINAL_RUN_STATUSES.includes(result.status) ? "ended" : "leased"), result };
}

/**
 * Fail `run` (failLeftRun), then the runs below it (failLeftDescendants), then release its sandbox if it was failed
 * here and no run below that is still unfinished (held by another process) works in it (`workspace: "shared"`).
 */
export async function failLeftSubtree(
  parts: LeftRunParts,
  run: RunRecord,
  error: AssemblyLineError,
  errorFor: (below: RunRecord) => AssemblyLineError,
): Promise<{ outcome: LeftRunOutcome; result: RunResult; failed: string[] }> {
  const { outcome, result } = await failLeftRun(parts, run, error);
  // Whatever became of `run`: below one that ended or another process holds may be runs no drive holds.
  const failed = [...(outcome === "failed" ? [run.id] : []), ...(await failLeftDescendants(parts, run.id, errorFor))];
  if (outcome === "failed") {
    if (await sandboxInUseBelow(parts.runs, run.id, run.id)) {
      parts.logger.warn({ runId: run.id, event: "subagent.sandbox_kept" }, "a failed subagent run's sandbox is kept: a run below it that another process drives works in it");
    } else {
      await parts.releaseHeld(run);
    }
  }
  return { outcome, result, failed };
}

/**
 * Fail every subagent run below `parentRunId` that is left part-way or waits for a decision, each level down.
 * Each child's own children are looked at whatever became of the child: below one that ended, or that another
 * process holds, may be runs no drive holds. `errorFor` makes each one's failure.
 */
export async function failLeftDescendants(parts: LeftRunParts, parentRunId: string, errorFor: (run: RunRecord) => AssemblyLineError): Promise<string[]> {
  const failed: string[] = [];
  for (const childRunId of await childRunIdsOf(parts.runs, parentRunId)) {
    const child = await parts.runs.getRun(childRunId);
    if (!child || child.input.parent?.runId !== parentRunId) continue;
    if (!unfinished(child)) {
      failed.push(...(await failLeftDescendants(parts, child.id, errorFor)));
      continue;
    }
    const below = await failLeftSubtree(parts, child, errorFor(child), errorFor);
    if (below.outcome === "leased") {
      parts.logger.warn(
        { runId: child.id, parentRunId, event: "subagent.left_to_holder" },
        "a subagent run whose parent ended is driven by another process now; it is left to that process",
      );
    }
    failed.push(...below.failed);
  }
  return failed;
}

/** Whether an unfinished run below `parentRunId` works in the sandbox of run `sandboxRunId` (a `workspace: "shared"` subagent's). */
async function sandboxInUseBelow(runs: RunStore, sandboxRunId: string, parentRunId: string): Promise<boolean> {
  for (const childRunId of await childRunIdsOf(runs, parentRunId)) {
    const child = await runs.getRun(childRunId);
    // Only a shared child names it, and only a shared child's own shared children name it again.
    if (!child || child.input.parent?.runId !== parentRunId || child.input.parent.sandboxRunId !== sandboxRunId) continue;
    if (unfinished(child) || (await sandboxInUseBelow(runs, sandboxRunId, child.id))) return true;
  }
  return false;
}

/**
 * The nearest run above subagent run `run` (its parent, its parent's parent, ...) that has failed or completed:
 * a parent still running under a denied grandparent takes no output on anyone's behalf either. Walked as many
 * levels as the run is deep (at least `maxDepth`), so a damaged chain cannot loop.
 */
export async function endedAncestorOf(runs: RunStore, run: RunRecord, maxDepth: number): Promise<RunRecord | undefined> {
  const levels = Math.max(run.input.parent?.depth ?? 0, maxDepth);
  let above = run.input.parent?.runId;
  for (let level = 0; above !== undefined && level < levels; level += 1) {
    const ancestor = await runs.getRun(above);
    if (!ancestor) return undefined;
    if (ancestor.status === "failed" || ancestor.status === "completed") return ancestor;
    above = ancestor.input.parent?.runId;
  }
  return undefined;
}

/** Fail `run`, left part-way under `ended` (its parent or a run above it) that has ended, and the runs below it left with it. */
export async function failLeftUnder(parts: LeftRunParts, run: RunRecord, ended: RunRecord): Promise<{ result: RunResult; failed: string[] }> {
  const denied = ended.status === "failed" && failedOnDeniedPause(await parts.runs.listEvents(ended.id));
  const { result, failed } = await failLeftSubtree(parts, run, parentEndedError(run, ended, denied), (below) => parentEndedError(below, ended, denied));
  return { result, failed };
}

/** Runs read per subagent per page by failRunsUnderEndedAncestors. */
const SWEEP_PAGE = 200;

/**
 * Fail every subagent run of `agentIds` left unfinished (running, queued, or resting on a decision) with no live
 * lease under a run above it that has ended (failLeftUnder): what a crash between a parent's end and its children's
 * failures leaves. A run whose record changed within `settledForMs` is left: a drive may be about to take it.
 * Returns the ids of the runs failed.
 */
export async function failRunsUnderEndedAncestors(parts: LeftRunParts, agentIds: string[], options: { maxDepth: number; settledForMs: number }): Promise<string[]> {
  const failed = new Set<string>();
  const now = Date.now();
  for (const agentId of agentIds) {
    let cursor: string | undefined;
    do {
      const page = await parts.runs.listRuns({ status: ["running", "queued", "waiting_approval", "waiting_input"], agentId, limit: SWEEP_PAGE, ...(cursor ? { cursor } : {}) });
      for (const run of page.runs) {
        if (failed.has(run.id) || !isLeaseFree(run.lease, new Date(now)) || now - Date.parse(run.updatedAt) < options.settledForMs) continue;
        const ended = await endedAncestorOf(parts.runs, run, options.maxDepth);
        if (!ended) continue;
        try {
          for (const id of (await failLeftUnder(parts, run, ended)).failed) failed.add(id);
        } catch (error) {
          // One run that cannot be failed here (its build not kept by this process, the store failing) keeps no other left.
          parts.logger.warn({ runId: run.id, event: "subagent.left_fail_failed", err: String(error) }, "failing a subagent run left under a run that has ended failed; a later sweep tries again");
        }
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  return [...failed];
}

/** Whether `run` has not ended: left part-way (`running`, `queued`) or resting on a decision. */
function unfinished(run: RunRecord): boolean {
  return !TERMINAL_RUN_STATUSES.includes(run.status);
}

/**
 * The subagent runs `parentRunId` spawned: those its `subagent.started` events name, and those of its
 * unfinished calls found by their ids (childRunIdFor). A spawn its parent's pause stopped before the child
 * was recorded, or a crash between the two, left a child no event names.
 */
async function childRunIdsOf(runs: RunStore, parentRunId: string): Promise<string[]> {
  const [events, calls] = await Promise.all([runs.listEvents(parentRunId), runs.listToolCalls(parentRunId)]);
  const ids = new Set(events.filter((event) => event.type === "subagent.started").map((event) => String(event.data.childRunId)));
  for (const call of calls) {
    // A finished call's spawns were recorded as it went: only a call left open can hide one.
    if (call.status === "completed" || call.status === "failed" || call.status === "denied") continue;
    // A call's spawns are numbered from 0 in order: the first index with no run ends its spawns.
    for (let spawnIndex = 0; ; spawnIndex += 1) {
      const id = childRunIdFor(parentRunId, call.callId, spawnIndex);
      if (ids.has(id)) continue;
      if (!(await runs.getRun(id))) break;
      ids.add(id);
    }
  }
  return [...ids];
}

/** The failure of a subagent run left part-way under `deniedRunId` (its parent's `maxDurationMs` pause stopped it) when that run's pause is denied. */
export function pauseDeniedError(run: RunRecord, deniedRunId: string): AssemblyLineError {
  return new AssemblyLineError(
    "AL_ERR_SUBAGENT_PARENT_ENDED",
    `subagent ${run.input.parent?.subagent ?? run.agentId} (run ${run.id}) was left part-way when run ${deniedRunId} paused on its budget, and that pause was denied: it fails with run ${deniedRunId} instead of running on for output nothing takes`,
    { fix: `Nothing to do for this run. To have the work done, start it again with more time (budgets.maxDurationMs), or approve such a pause instead of denying it.`, details: { parentRunId: run.input.parent?.runId, deniedRunId } },
  );
}

/**
 * The failure of a subagent run left part-way under `ended` (its parent, or a run above it), which has failed or
 * completed since: `denied` when it failed on a denied budget pause (the recovery sweep finishing what the denial began).
 */
export function parentEndedError(run: RunRecord, ended: RunRecord, denied: boolean): AssemblyLineError {
  const how = denied ? "failed on its denied budget pause" : ended.status === "failed" ? `failed${ended.error?.code ? ` (${ended.error.code})` : ""}` : "completed";
  const which = run.input.parent?.runId === ended.id ? "its parent run" : "run";
  const where = run.input.parent?.runId === ended.id ? "" : ", above it,";
  return new AssemblyLineError(
    "AL_ERR_SUBAGENT_PARENT_ENDED",
    `subagent ${run.input.parent?.subagent ?? run.agentId} (run ${run.id}) was left part-way, and ${which} ${ended.id}${where} ${how} since: it fails instead of running on for output nothing takes`,
    { fix: `Nothing to do for this run; see \`assembly-line runs show ${ended.id}\` for how that run ended.`, details: { parentRunId: run.input.parent?.runId, endedRunId: ended.id } },
  );
}
