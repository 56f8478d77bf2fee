import { isAssemblyLineError, isLeaseFree, type RunRecord, type RunStatus, type RuntimeLogger } from "@assemblyline-agents/core";
import type { OpenEveRuntime } from "@assemblyline-agents/runtime";
import type { ConversationMailbox } from "./mailbox.js";

/**
 * Whether a queued run may be taken into this process's mailbox: nobody holds its lease, and it was
 * accepted at least `adoptAfterMs` ago, so no live replica's mailbox still holds it.
 */
export function isQueuedRunAdoptable(run: RunRecord, at: Date, adoptAfterMs: number): boolean {
  return isLeaseFree(run.lease, at) && at.getTime() - Date.parse(run.createdAt) >= adoptAfterMs;
}

/**
 * Finds work a previous process (or a dead replica) left behind and takes it
 * up: `running` runs whose lease expired are resumed at once (resumes bypass
 * admission), `queued` runs go back into the mailbox in acceptance order, so
 * they keep their conversation order and the concurrency limit. The lease on
 * each run decides which replica executes it. Subagent runs are left to their
 * parents' drives; parents a crash left waiting on an ended subagent run are
 * woken, and subagent runs left under a run that has ended are failed
 * (`runtime.recoverSubagentRuns`). Finished and paused runs whose
 * hooks missed events get them (`runtime.catchUpObservers`), and the
 * sandboxes of finished runs that were never released are
 * (`runtime.releaseFinishedSandboxes`).
 */
export class RunRecovery {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly runtime: OpenEveRuntime,
    private readonly mailbox: ConversationMailbox,
    private readonly logger: RuntimeLogger,
    /** A queued run younger than this may still be in a live replica's mailbox. */
    private readonly adoptAfterMs: number,
  ) {}

  /** Sweep now (boot: every queued run is adopted), then every `intervalMs`. */
  async start(intervalMs: number): Promise<void> {
    await this.sweep(0, { everyRun: true });
    const tick = () => {
      if (this.stopped) return;
      this.timer = setTimeout(async () => {
        await this.sweep(this.adoptAfterMs);
        tick();
      }, intervalMs);
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.sweeping;
  }

  /** With `everyRun`, hooks get the missed events of every resting run, not only the newest (see catchUpObservers). */
  sweep(adoptAfterMs: number, options: { everyRun?: boolean } = {}): Promise<void> {
    this.sweeping ??= this.sweepOnce(adoptAfterMs, options.everyRun === true)
      .catch((error) => this.logger.warn({ event: "recovery.sweep_failed", err: String(error) }, "looking for orphaned runs failed; retrying next interval"))
      .finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async sweepOnce(adoptAfterMs: number, everyRun: boolean): Promise<void> {
    const now = Date.now();
    const at = new Date(now);
    for (const run of await this.listAll("running")) {
      if (this.stopped) return;
      const leased = !isLeaseFree(run.lease, at);
      // A live lease of this process is a drive in progress here.
      if (leased && run.lease!.owner === this.runtime.ownerId) continue;
      // No lease at all is the moment between a decision and its drive taking the lease: give it time.
      if (!run.lease && now - Date.parse(run.updatedAt) < adoptAfterMs) continue;
      // Another owner's unexpired lease is tried too: the store hands the run over at once when
      // that owner is provably dead (its state folder lock or database session is gone) and
      // refuses while it lives (AL_ERR_RUN_NOT_RESUMABLE, ignored below).
      if (!leased) this.logger.info({ event: "recovery.resume", runId: run.id }, "resuming a run whose owner stopped");
      this.runtime.resume(run.id, { recovered: true }).catch((error) => {
        // A live replica's run of a build this host lacks (a rolling deploy) is not this host's business yet.
        if (leased && isAssemblyLineError(error, "AL_ERR_CONTINUATION_VERSION")) return;
        if (!isAssemblyLineError(error, "AL_ERR_RUN_NOT_RESUMABLE")) {
          this.logger.warn({ event: "recovery.resume_failed", runId: run.id, err: String(error) }, "resuming an orphaned run failed");
        }
      });
    }
    // listRuns is newest first; the mailbox wants acceptance order.
    const queued = (await this.listAll("queued")).reverse();
    let adopted = 0;
    for (const run of queued) {
      if (this.stopped) return;
      if (this.mailbox.has(run.id)) continue;
      if (!isQueuedRunAdoptable(run, at, adoptAfterMs)) continue;
      this.mailbox.enqueue(run.id, run.conversationId);
      adopted += 1;
    }
    if (adopted > 0) this.logger.info({ event: "recovery.adopted", count: adopted }, "queued runs taken into the mailbox");
    if (this.stopped) return;
    // Subagent runs are driven by their parents' drives, never resumed here: what a crash leaves of them
    // (a parent not woken after its child ended, a child left under a parent that ended) is the runtime's to settle.
    const failed = await this.runtime
      .recoverSubagentRuns({ settledForMs: this.adoptAfterMs })
      .catch((error: unknown) => (this.logger.warn({ event: "recovery.subagent_sweep_failed", err: String(error) }, "recovering subagent runs failed; retrying next interval"), []));
    if (failed.length > 0) this.logger.info({ event: "recovery.subagent_runs_failed", runIds: failed }, "subagent runs left under a run that has ended are failed");
    if (this.stopped) return;
    // Resting runs are driven by nobody: their events a crash kept from the hooks are delivered here,
    // every run's once at boot, the newest runs' at each sweep after.
    const caughtUp = await this.runtime.catchUpObservers({ everyRun });
    if (caughtUp > 0) this.logger.info({ event: "recovery.observers_caught_up", count: caughtUp }, "hooks given the events of resting runs that a stopped process had not delivered");
    if (this.stopped) return;
    const released = await this.runtime.releaseFinishedSandboxes();
    if (released.length > 0) this.logger.info({ event: "recovery.sandboxes_released", runIds: released }, "sandboxes of finished runs that a stopped process had not released are released");
  }

  private async listAll(status: RunStatus): Promise<RunRecord[]> {
    const all: RunRecord[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.runtime.state.runs.listRuns({ status, agentId: this.runtime.manifest.agent.id, limit: 200, ...(cursor ? { cursor } : {}) });
      all.push(...page.runs);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return all;
  }
}
