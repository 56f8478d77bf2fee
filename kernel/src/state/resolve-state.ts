import {
  AssemblyLineError,
  STATE_FACET_NAMES,
  missingFacetMethods,
  type RuntimeLogger,
  type StateAdapter,
  type StateFacetName,
  type StateStores,
} from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "./in-memory-state.js";

export type ResolvedState = Required<Omit<StateStores, "close">> & { close?: () => Promise<void> };

/**
 * Accept a full StateAdapter (duck-typed by createRun + appendEvent(s)) or a
 * StateStores object. Missing optional facets fall back to memory, reported in
 * one `state.degraded` warning.
 */
export function resolveState(state: StateAdapter | StateStores | undefined, logger: RuntimeLogger): ResolvedState {
  if (state === undefined) {
    logger.warn({ event: "state.degraded", missing: [...STATE_FACET_NAMES] }, "no state given: every facet, runs included, is non-durable memory");
    return facetsOf(new InMemoryStateAdapter(), {});
  }
  // The documented duck type is createRun + appendEvent: an adapter written to it is taken as one, and then
  // told which RunStore methods it lacks (appendEvents among them), rather than that it has no runs facet.
  const candidate = state as Partial<Record<"createRun" | "appendEvents" | "appendEvent", unknown>>;
  const isAdapter = typeof candidate.createRun === "function" && (typeof candidate.appendEvents === "function" || typeof candidate.appendEvent === "function");
  const stores: Partial<Record<StateFacetName, unknown>> = {};
  if (isAdapter) {
    for (const facet of STATE_FACET_NAMES) if (missingFacetMethods(state, facet).length === 0) stores[facet] = state;
    // Runs has no fallback: an adapter's runs facet is always its own, checked below for what it lacks.
    stores.runs = state;
  } else {
    Object.assign(stores, state);
    refuseUnusableFacets(state as StateStores);
  }
  if (!stores.runs) {
    throw new AssemblyLineError("AL_ERR_STATE_RUNS_REQUIRED", "RuntimeOptions.state has no runs facet (RunStore)", {
      fix: "Pass a full StateAdapter (e.g. new InMemoryStateAdapter()) or { runs: myRunStore, ...optional facets }.",
    });
  }
  const missingRunMethods = missingFacetMethods(stores.runs, "runs");
  if (missingRunMethods.length > 0) {
    throw new AssemblyLineError("AL_ERR_STATE_RUNS_REQUIRED", `state.runs lacks ${missingRunMethods.join(", ")}`, {
      fix: "Implement every RunStore method; run the state conformance kit from @assemblyline-agents/core/testkit.",
    });
  }
  const missing = STATE_FACET_NAMES.filter((facet) => !stores[facet]);
  const fallback = new InMemoryStateAdapter();
  if (missing.length > 0) {
    logger.warn({ event: "state.degraded", missing }, `state facets ${missing.join(", ")} fall back to non-durable memory`);
  }
  const resolved = facetsOf(fallback, stores as Partial<ResolvedState>);
  const close = (state as { close?: () => Promise<void> }).close;
  if (typeof close === "function") resolved.close = () => close.call(state);
  return resolved;
}

function facetsOf(fallback: InMemoryStateAdapter, stores: Partial<ResolvedState>): ResolvedState {
  return {
    runs: stores.runs ?? fallback,
    conversations: stores.conversations ?? fallback,
    schedules: stores.schedules ?? fallback,
    files: stores.files ?? fallback,
    usage: stores.usage ?? fallback,
    sandboxSessions: stores.sandboxSessions ?? fallback,
    memory: stores.memory ?? fallback,
    settings: stores.settings ?? fallback,
    skills: stores.skills ?? fallback,
  };
}

/**
 * A StateStores object's optional facets are taken as given: one missing a method would fail the
 * first run that uses it with a bare TypeError, and a misspelt facet would fall back to memory.
 */
function refuseUnusableFacets(stores: StateStores): void {
  for (const [key, facet] of Object.entries(stores)) {
    if (key === "close" || key === "runs" || facet === undefined) continue;
    if (!(STATE_FACET_NAMES as readonly string[]).includes(key)) {
      throw new AssemblyLineError("AL_ERR_STATE_CONFIG", `RuntimeOptions.state has no facet named ${JSON.stringify(key)}`, {
        fix: `Name each facet one of ${STATE_FACET_NAMES.join(", ")}, or pass a full StateAdapter.`,
      });
    }
    const missing = missingFacetMethods(facet, key as StateFacetName);
    if (missing.length > 0) {
      throw new AssemblyLineError("AL_ERR_STATE_CONFIG", `state.${key} lacks ${missing.join(", ")}`, {
        fix: `Implement every method of the ${key} facet (the state conformance kit in @assemblyline-agents/core/testkit checks them), or leave ${key} out to keep it in non-durable memory.`,
      });
    }
  }
}
