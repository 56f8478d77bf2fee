import { describe, expect, it, onTestFinished } from "vitest";
import type { ClaimOptions, RunRecord, RuntimeLogger, StateAdapter } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, scriptedHarness, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { twoAgentsOnOneStore } from "./support/two-agents-one-store.js";

/**
 * Two agents' runtimes on one state store (as two agents on one database are). Agent B's id starts
 * with agent A's, without the "/" of a subagent: its runs are not A's subagents' runs.
 */
const AGENT_A = "recovering-agent";
const AGENT_B = "recovering-agent-eu";

const { agents, stores, sharedStore } = await twoAgentsOnOneStore("recoverRuns in a shared store", "al_shared_recovery", [AGENT_A, AGENT_B]);

function runtimeOf(bundle: RuntimeBundle, state: StateAdapter, logger?: RuntimeLogger): OpenEveRuntime {
  const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: scriptedHarness({ turns: [{ text: `answered by ${bundle.manifest.agent.id}` }] }), ...(logger ? { logger } : {}) });
  onTestFinished(() => runtime.close());
  return runtime;
}

/** A logger that keeps the fields of every warning. */
function warningsLogger(): RuntimeLogger & { warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  return { warnings, debug: () => undefined, info: () => undefined, error: () => undefined, warn: (fields) => void warnings.push(fields) };
}

/** A run its owner started and died driving: running, no lease, no checkpoint. */
async function orphanedRun(state: StateAdapter, bundle: RuntimeBundle, agentId = bundle.manifest.agent.id): Promise<RunRecord> {
  const { run } = await state.createRun({
    id: `run_${agentId.replaceAll("/", "_")}_${Math.random().toString(36).slice(2)}`,
    agentId,
    agentRevision: bundle.manifest.agentRevision,
    modelSpec: bundle.manifest.agent.model,
    input: { message: "left behind", metadata: {} },
    status: "running",
  });
  await state.appendEvents(run.id, [{ type: "run.started", data: { modelSpec: bundle.manifest.agent.model, instructions: "", defaultTools: null } }]);
  return (await state.getRun(run.id))!;
}

describe.each(Object.entries(stores))("runtime.recoverRuns on a store shared with another agent (%s)", (_name, open) => {
  it("takes over and drives only its own agent's runs; the other agent's runtime drives the other's", async () => {
    const state = await sharedStore(open);
    const mine = await orphanedRun(state, agents.a);
    const theirs = await orphanedRun(state, agents.b);
    const logger = warningsLogger();
    const a = runtimeOf(agents.a, state, logger);
    const b = runtimeOf(agents.b, state);

    const recoveredByA = await a.recoverRuns();
    expect(recoveredByA.map((result) => result.runId)).toEqual([mine.id]);
    expect(recoveredByA[0]).toMatchObject({ status: "completed", response: { text: `answered by ${AGENT_A}` } });
    // A's runtime neither leased nor wrote B's run: the store never handed it over.
    expect(logger.warnings.filter((fields) => fields.event === "state.claim_filter_ignored")).toEqual([]);
    expect(await state.getRun(theirs.id)).toMatchObject({ status: "running", lease: null, lastSeq: theirs.lastSeq });

    const recoveredByB = await b.recoverRuns();
    expect(recoveredByB.map((result) => result.runId)).toEqual([theirs.id]);
    expect(recoveredByB[0]).toMatchObject({ status: "completed", response: { text: `answered by ${AGENT_B}` } });
  });
});

describe("runtime.recoverRuns on a store that ignores claimRecoverableRuns' agentId (one built before it)", () => {
  it("lets the other agent's run go at once, undriven, and says the store ignores the option", async () => {
    const state = await sharedStore(async () => new InMemoryStateAdapter());
    const claim = state.claimRecoverableRuns.bind(state);
    state.claimRecoverableRuns = ({ agentId: _ignored, ...options }: ClaimOptions) => claim(options);
    const logger = warningsLogger();
    const mine = await orphanedRun(state, agents.a);
    const theirs = await orphanedRun(state, agents.b);

    const recovered = await runtimeOf(agents.a, state, logger).recoverRuns();
    expect(recovered.map((result) => result.runId)).toEqual([mine.id]);
    expect(await state.getRun(theirs.id)).toMatchObject({ status: "running", lease: null, lastSeq: theirs.lastSeq });
    expect(logger.warnings.filter((fields) => fields.event === "state.claim_filter_ignored")).toEqual([{ event: "state.claim_filter_ignored", runIds: [theirs.id] }]);

    // Released, not held to its lease's end: B's runtime takes it at once.
    expect((await runtimeOf(agents.b, state).recoverRuns()).map((result) => result.runId)).toEqual([theirs.id]);
  });
});
