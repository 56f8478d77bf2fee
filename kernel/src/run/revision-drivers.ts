import { existsSync } from "node:fs";
import { join } from "node:path";
import { AssemblyLineError, revisionOfRun, type RunRecord, type RunStatus, type RunStore } from "@assemblyline-agents/core";
import { describeSchemaErrors } from "../schema.js";
import { MANIFEST_FILE } from "../compiler/build.js";
import { loadRuntimeBundle, type RuntimeBundle } from "../compiler/bundle.js";
import { REVISION_MARK_INTERVAL_MS, holdRevision, markRevisionInUse, pruneRevisions, revisionRoot } from "../compiler/revisions.js";
import type { RunDriver } from "./run-driver.js";
import type { RunResult } from "./run-result.js";

/** Statuses of runs that may still need the build they started under. */
export const UNFINISHED_STATUSES: RunStatus[] = ["queued", "running", "waiting_approval", "waiting_input"];

/**
 * One driver per agent revision: runs of the current build use the current
 * driver; a run paused under an earlier build continues on that build, loaded
 * from the copy every build keeps under `<artifactRoot>/revisions/`.
 */
export class RevisionDrivers {
  private readonly pinned = new Map<string, Promise<RunDriver>>();
  /** Marks the current build's copy in use while this runtime is open, so no other process prunes it (see pruneRevisions). */
  private readonly marking: NodeJS.Timeout | undefined;

  constructor(
    readonly current: RunDriver,
    private readonly currentRevision: string,
    private readonly runs: RunStore,
    private readonly artifactRoot: string | undefined,
    private readonly createDriver: (bundle: RuntimeBundle) => RunDriver,
  ) {
    if (artifactRoot === undefined) return;
    const mark = () => void markRevisionInUse(artifactRoot, currentRevision);
    mark();
    this.marking = setInterval(mark, REVISION_MARK_INTERVAL_MS).unref();
  }

  /** Stop marking the current build's copy in use: it is pruned once no run needs it and the last mark is old. */
  close(): void {
    clearInterval(this.marking);
  }

  /**
   * The revision a run continues on: the one it was last migrated to, else the one it started under.
   * A run started under the current build may have moved away from it (and the folder been reverted
   * since), so the events are read for every run but a queued one.
   */
  revisionOf(run: RunRecord): Promise<string> {
    return revisionOfRun(this.runs, run);
  }

  /**
   * The driver of the build a run goes on under. `hold: false` writes no hold: for a reader of a run that
   * never goes on again (a finished run's missed events), which must not keep its build from a prune.
   */
  async driverFor(run: RunRecord, options: { hold?: boolean } = {}): Promise<{ driver: RunDriver; revision: string }> {
    const revision = await this.revisionOf(run);
    // A run going on from a pause (or a stop) may pause there again: a runtime on another state store then
    // leaves that build (see holdRevision). A queued run is held from the next prune: no write on every start.
    if (this.artifactRoot && run.status !== "queued" && options.hold !== false) await holdRevision(this.artifactRoot, revision, run.id);
    if (revision === this.currentRevision) return { driver: this.current, revision };
    let driver = this.pinned.get(revision);
    if (!driver) {
      driver = this.loadPinned(run, revision);
      this.pinned.set(revision, driver);
      driver.catch(() => this.pinned.delete(revision));
    }
    return { driver: await driver, revision };
  }

  private async loadPinned(run: RunRecord, revision: string): Promise<RunDriver> {
    const root = this.artifactRoot ? revisionRoot(this.artifactRoot, revision) : undefined;
    if (!root || !existsSync(join(root, MANIFEST_FILE))) {
      throw new AssemblyLineError("AL_ERR_CONTINUATION_VERSION", `run ${run.id} belongs to revision ${revision}, and this host has no copy of that build (${this.currentRevision} is current)`, {
        fix: this.artifactRoot
          ? `Builds keep earlier revisions under ${join(this.artifactRoot, "revisions")} while runs need them; continue this run on a host that has that build, or move it with \`assembly-line runs migrate ${run.id} --to current\`.`
          : "Create the runtime from loadRuntimeBundle(artifactRoot), so it can load the builds that paused runs belong to.",
      });
    }
    return this.createDriver(await loadRuntimeBundle(root));
  }

  /**
   * Move a paused run to the current build, when the author chooses: refused,
   * with the reason, when a pending tool call no longer exists there or its
   * input no longer matches the tool's schema. Recorded as `run.migrated`.
   */
  async migrate(runId: string, options: { actor?: string } = {}): Promise<RunResult> {
    const refuse = (problem: string) =>
      new AssemblyLineError("AL_ERR_RUN_MIGRATION", `run ${runId} cannot move to revision ${this.currentRevision}: ${problem}`, {
        fix: "Decide the run on the build it paused under (approve, deny or answer work as usual), or change the tool back so the pending call fits it.",
      });
    return this.current.drive(runId, {
      // Under the run's lease, so no decision or turn interleaves with the move.
      beforeDriving: async (run) => {
        if (run.status !== "waiting_approval" && run.status !== "waiting_input") {
          throw refuse(`it is ${run.status}; only paused runs (waiting_approval, waiting_input) can move`);
        }
        const from = await this.revisionOf(run);
        if (from === this.currentRevision) throw refuse("it already runs on that revision");
        const pending = (await this.runs.listToolCalls(runId)).filter((call) => call.status === "waiting_approval" || call.status === "waiting_input");
        for (const call of pending) {
          const entry = this.current.table.get(call.toolName);
          if (!entry || entry.mode === "disabled") throw refuse(`its pending call ${call.callId} is to ${call.toolName}, which that revision no longer has`);
          if (!entry.validateInput(call.input)) {
            throw refuse(`its pending call ${call.callId} to ${call.toolName} no longer matches the tool's input schema (${describeSchemaErrors(entry.validateInput.errors).join("; ")})`);
          }
        }
        await this.current.journal.record(runId, "run.migrated", { from, to: this.currentRevision, actor: options.actor ?? null }, undefined, { expectedLastSeq: run.lastSeq });
        if (this.artifactRoot) await holdRevision(this.artifactRoot, this.currentRevision, runId);
        return false;
      },
    });
  }

  /**
   * Delete the kept builds no unfinished run (of this store or, by its hold, of another) needs and no
   * live runtime marked lately; the current one always stays. Refreshes the holds of this store's runs.
   */
  async prune(): Promise<string[]> {
    const artifactRoot = this.artifactRoot;
    if (!artifactRoot) return [];
    const keep = new Set([this.currentRevision]);
    let cursor: string | undefined;
    do {
      const page = await this.runs.listRuns({ status: UNFINISHED_STATUSES, limit: 200, ...(cursor ? { cursor } : {}) });
      for (const run of page.runs) {
        const revision = await this.revisionOf(run);
        keep.add(revision);
        await holdRevision(artifactRoot, revision, run.id);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return pruneRevisions(artifactRoot, keep, { ownRun: async (runId) => (await this.runs.getRun(runId)) !== undefined });
  }
}
