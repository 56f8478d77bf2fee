import { describe, expect, it } from "vitest";
import { STATE_FACET_NAMES, missingFacetMethods, type StateFacetName } from "../../state/index.js";
import {
  describeConversationStoreConformance,
  describeFileIndexStoreConformance,
  describeMemoryStateStoreConformance,
  describeRuntimeSettingsStoreConformance,
  describeSandboxSessionStoreConformance,
  describeScheduleStateStoreConformance,
  describeUsageStoreConformance,
} from "./facets.js";
import { describeRunStoreConformance } from "./runs.js";
import { describeSkillStoreConformance } from "./skills.js";
import type { StateKitFactory } from "./subject.js";

export * from "./facets.js";
export * from "./runs.js";
export * from "./skills.js";
export type { StateKitFactory, StateKitSubject } from "./subject.js";

/** One kit per facet, keyed like `StateStores` and `STATE_FACET_METHODS`. */
export const stateFacetKits: { [F in StateFacetName]: (name: string, factory: StateKitFactory<never>) => void } = {
  runs: describeRunStoreConformance,
  conversations: describeConversationStoreConformance,
  schedules: describeScheduleStateStoreConformance,
  files: describeFileIndexStoreConformance,
  usage: describeUsageStoreConformance,
  sandboxSessions: describeSandboxSessionStoreConformance,
  memory: describeMemoryStateStoreConformance,
  settings: describeRuntimeSettingsStoreConformance,
  skills: describeSkillStoreConformance,
};

export interface StateConformanceOptions {
  /**
   * The facets the state claims. Each must be implemented or the kit fails.
   * Default: every facet the state implements (`runs` is always required).
   */
  facets?: StateFacetName[];
}

/**
 * The object that serves `facet`: a flat adapter (`StateAdapter`, or a class with
 * only some facets) serves it itself; a `StateStores` bundle through its property.
 */
export function stateFacet(state: unknown, facet: StateFacetName): unknown {
  if (missingFacetMethods(state, facet).length === 0) return state;
  const nested = typeof state === "object" && state !== null ? (state as Record<string, unknown>)[facet] : undefined;
  return missingFacetMethods(nested, facet).length === 0 ? nested : undefined;
}

/**
 * Runs the kit of every facet `state` claims. The factory is called once while
 * collecting tests (to see which facets the state implements), then once per
 * test, with `cleanup` after each.
 *
 *   describeStateConformance("FileStateAdapter", async () => {
 *     const dir = await mkdtemp(join(tmpdir(), "state-"));
 *     const state = new FileStateAdapter({ directory: dir });
 *     return { state, cleanup: async () => { await state.close(); await rm(dir, { recursive: true }); } };
 *   });
 */
export function describeStateConformance(name: string, factory: StateKitFactory<unknown>, options: StateConformanceOptions = {}): void {
  describe(`${name}: state conformance`, async () => {
    const probe = await factory();
    const implemented = STATE_FACET_NAMES.filter((facet) => stateFacet(probe.state, facet) !== undefined);
    await probe.cleanup?.();

    const claimed = [...new Set<StateFacetName>(["runs", ...(options.facets ?? implemented)])];
    const missing = claimed.filter((facet) => !implemented.includes(facet));
    it("implements every facet it claims", () => {
      const detail = missing.map((facet) => `${facet} (lacks ${missingFacetMethods(stateFacet(probe.state, facet) ?? probe.state, facet).join(", ")})`);
      expect(detail, `${name} claims facets it does not implement`).toEqual([]);
    });

    for (const facet of claimed.filter((facet) => implemented.includes(facet))) {
      const kit = stateFacetKits[facet];
      kit(name, async () => {
        const subject = await factory();
        return { state: stateFacet(subject.state, facet) as never, cleanup: async () => subject.cleanup?.() };
      });
    }
  });
}
