import { describeStateConformance } from "@assemblyline-agents/core/testkit";
import { isStateAdapter } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "../dist/state/in-memory-state.js";

describeStateConformance("InMemoryStateAdapter", () => ({ state: new InMemoryStateAdapter() }), {
  facets: ["runs", "conversations", "schedules", "files", "usage", "sandboxSessions", "memory", "settings", "skills"],
});

// A StateStores bundle claiming two facets: the helper runs exactly those kits.
describeStateConformance("InMemoryStateAdapter as a StateStores bundle", () => {
  const state = new InMemoryStateAdapter();
  return { state: { runs: state, memory: state } };
});

describe("InMemoryStateAdapter", () => {
  it("implements the whole StateAdapter", () => {
    expect(isStateAdapter(new InMemoryStateAdapter())).toBe(true);
  });

  it("keeps the state of separate instances apart", async () => {
    const a = new InMemoryStateAdapter();
    const b = new InMemoryStateAdapter();
    await a.writeMemory("x", "1");
    expect(await b.readMemory("x")).toBeUndefined();
  });
});
