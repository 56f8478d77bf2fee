import { noopLogger, type RuntimeLogger, type ScheduleRecord } from "@assemblyline-agents/core";
import { Automations, InMemoryStateAdapter, buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./agent-folder.js";

/**
 * An agent folder's automations on an in-memory store whose clock the test
 * moves; `submit` dedupes by key as runtime.submit does. `make` builds another
 * Automations on the same store (a restart, another replica, other statics).
 */
export async function automationsAt(files: Record<string, string>, start: string) {
  const { artifactRoot } = await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, ...files }));
  const bundle = await loadRuntimeBundle(artifactRoot);
  const state = new InMemoryStateAdapter();
  const clock = { now: new Date(start) };
  const submitted: Array<{ idempotencyKey: string; metadata: unknown; message: string }> = [];
  const runs = new Map<string, { runId: string; metadata: unknown }>();
  const make = (statics = bundle.manifest.automations, logger: RuntimeLogger = noopLogger()) =>
    new Automations({
      store: state,
      agentId: bundle.manifest.agent.id,
      statics,
      logger,
      now: () => clock.now,
      submit: async (input) => {
        submitted.push({ idempotencyKey: input.idempotencyKey, metadata: input.metadata, message: input.message });
        const known = runs.get(input.idempotencyKey);
        if (known) return { runId: known.runId, created: false };
        runs.set(input.idempotencyKey, { runId: `run_${runs.size + 1}`, metadata: input.metadata });
        return { runId: `run_${runs.size}`, created: true };
      },
    });
  const automations = make();
  await automations.syncStatic();
  const claim = async (owner = "test"): Promise<ScheduleRecord[]> => state.claimDueSchedules({ owner, ttlMs: 60_000, now: clock.now });
  /** Claim every due row, dispatch it and move its schedule on if unchanged since the claim, as a scheduler does (on `host`, another Automations, if given). */
  const dispatchAll = async (host = automations) => {
    const results = [];
    for (const row of await claim()) {
      const result = await host.dispatchDue(row);
      await state.completeScheduleRun(row.id, "test", result.nextRunAt, row.nextRunAt, row);
      results.push(result);
    }
    return results;
  };
  return { automations, make, bundle, state, clock, submitted, runs, dispatchAll, claim };
}
