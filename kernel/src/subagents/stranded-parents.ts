import type { RunRecord, RunStore } from "@assemblyline-agents/core";
import type { AgentProfile } from "../agents/agent-profile.js";

/** Runs read per agent per sweep, on each side. */
const SWEEP_PAGE = 50;

/**
 * Finds runs a crash left paused on a subagent run that has ended: the process died between the
 * child's end and the parent's wake, and nothing else wakes them. Each sweep reads two bounded pages
 * per agent, whatever the store holds:
 * - the newest ended runs of each subagent: a crash just now is found at the next sweep;
 * - the next page of resting runs of each agent that has subagents, from where the last sweep
 *   stopped, starting over at the newest after the oldest: every resting parent is looked at
 *   within (its agent's resting runs / 50) sweeps, however many newer children ended since.
 */
export class StrandedParentSweep {
  /** Where each agent's walk through its resting runs goes on; in memory: a new process starts at the newest. */
  private readonly cursors = new Map<string, string>();

  constructor(
    private readonly runs: RunStore,
    private readonly root: AgentProfile,
  ) {}

  /** Offer each run that may be such a parent to `wake` (which checks it), once per sweep. */
  async sweep(wake: (run: RunRecord) => Promise<void>): Promise<void> {
    const offered = new Set<string>();
    const offer = async (run: RunRecord) => {
      if (offered.has(run.id)) return;
      offered.add(run.id);
      await wake(run);
    };
    for (const profile of profilesBelow(this.root)) {
      const { runs } = await this.runs.listRuns({ status: ["completed", "failed"], agentId: profile.agentId, limit: SWEEP_PAGE });
      for (const parentRunId of new Set(runs.map((run) => run.input.parent?.runId).filter((id): id is string => id !== undefined))) {
        const parent = await this.runs.getRun(parentRunId);
        if (parent) await offer(parent);
      }
    }
    for (const profile of [this.root, ...profilesBelow(this.root)].filter((candidate) => candidate.subagents.size > 0)) {
      for (const run of await this.nextRestingPage(profile.agentId)) await offer(run);
    }
  }

  private async nextRestingPage(agentId: string): Promise<RunRecord[]> {
    const cursor = this.cursors.get(agentId);
    // A cursor the store no longer reads (its runs deleted, the store replaced) restarts the walk, not stops it for good.
    this.cursors.delete(agentId);
    const page = await this.runs.listRuns({ status: ["waiting_approval", "waiting_input"], agentId, limit: SWEEP_PAGE, ...(cursor ? { cursor } : {}) });
    if (page.nextCursor) this.cursors.set(agentId, page.nextCursor);
    return page.runs;
  }
}

function profilesBelow(profile: AgentProfile): AgentProfile[] {
  return [...profile.subagents.values()].flatMap((child) => [child, ...profilesBelow(child)]);
}
