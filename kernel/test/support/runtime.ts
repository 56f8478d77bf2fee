import { buildAgent, loadRuntimeBundle, noopLogger, OpenEveRuntime, InMemoryStateAdapter, type RuntimeOptions } from "@assemblyline-agents/runtime";
import type { RunEvent } from "@assemblyline-agents/core";
import { onTestFinished } from "vitest";
import { probeHarness, type ProbeResponse } from "./probe-harness.js";

/** The test that started a runtime closes it when it ends (a test that closes it itself first is fine: close is idempotent), so no run, timer or connection of one test outlives it. */
function closedWhenTestEnds(runtime: OpenEveRuntime): void {
  onTestFinished(() => runtime.close());
}

/** Build a folder, start a runtime on it with a probe engine, and collect observed events. */
export async function startAgent(dir: string, responses: ProbeResponse[], options: Partial<RuntimeOptions> = {}) {
  const { artifactRoot } = await buildAgent(dir);
  const bundle = await loadRuntimeBundle(artifactRoot);
  const harness = probeHarness(responses);
  const state = (options.state as InMemoryStateAdapter | undefined) ?? new InMemoryStateAdapter();
  const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: harness, logger: noopLogger(), ...options });
  closedWhenTestEnds(runtime);
  const observed: RunEvent[] = [];
  runtime.hooks.event.tap("test-observer", (event) => {
    observed.push(event);
  });
  const events = async (runId: string) => runtime.listEvents(runId);
  const types = async (runId: string) => (await events(runId)).map((event) => event.type);
  return { runtime, harness, log: harness.log, state, observed, events, types, bundle };
}

/** Build a folder and start a runtime on it with the engine its model names (a scripted model file, say). */
export async function startBuilt(dir: string, options: Partial<RuntimeOptions> = {}) {
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const state = new InMemoryStateAdapter();
  const runtime = new OpenEveRuntime({ ...bundle, state, logger: noopLogger(), ...options });
  closedWhenTestEnds(runtime);
  return { runtime, state, bundle, manifest: bundle.manifest };
}
