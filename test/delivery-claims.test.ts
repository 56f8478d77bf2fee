import { describe, expect, it } from "vitest";
import type { StateAdapter } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { useFileStates } from "./support/file-states.js";

const fileStates = useFileStates("al-delivery-claims-");

/** Six completed runs, each owing one delivery, d0 to d5 in that order; every one claimed once at `start`. */
async function seed(state: StateAdapter, start: number): Promise<void> {
  for (let index = 0; index < 6; index += 1) {
    await state.createRun({ id: `run_${index}`, agentId: "notes", agentRevision: "rev", modelSpec: "test/model", input: { message: `${index}`, metadata: {} } });
    await state.appendEvents(`run_${index}`, [{ type: "run.completed", data: {} }], {
      run: { status: "completed" },
      delivery: { id: `d${index}`, channel: "chat", payload: { text: `${index}` } },
    });
  }
  const claimed = await state.claimDeliveries({ owner: "a", ttlMs: 1_000, limit: 100, now: new Date(start) });
  expect(claimed.map((delivery) => delivery.id)).toEqual(["d0", "d1", "d2", "d3", "d4", "d5"]);
  // A channel that fails: d1, d3 and d4 are retried later, d5 fails for good, d0 goes through, d2 stays leased.
  await state.failDelivery("d1", "a", "503", new Date(start + 5_000));
  await state.failDelivery("d3", "a", "503", new Date(start + 2_000));
  await state.failDelivery("d4", "a", "503", new Date(start + 2_000));
  await state.failDelivery("d5", "a", "400");
  await state.completeDelivery("d0", "a");
}

const claim = async (state: StateAdapter, owner: string, at: number, limit = 100, ttlMs = 1_000) =>
  (await state.claimDeliveries({ owner, ttlMs, limit, now: new Date(at) })).map((delivery) => delivery.id);

/** What each claim after `seed` leases: the due ones with no live lease, earliest due first, then in creation order. */
async function expectClaimsAfterSeed(state: StateAdapter, start: number): Promise<void> {
  expect(await claim(state, "b", start + 500)).toEqual([]);
  // d2's lease expired; the retries are not due yet. b holds it until start + 6 s.
  expect(await claim(state, "b", start + 1_000, 100, 5_000)).toEqual(["d2"]);
  // d3 and d4 fall due together: the one created first goes first, and the limit holds.
  expect(await claim(state, "c", start + 2_000, 1)).toEqual(["d3"]);
  expect(await claim(state, "c", start + 2_000)).toEqual(["d4"]);
  // Every lease has expired: each pending delivery once, by when it fell due.
  expect(await claim(state, "d", start + 10_000)).toEqual(["d2", "d3", "d4", "d1"]);
  expect(await claim(state, "e", start + 10_000)).toEqual([]);
}

describe.each([
  ["in-memory", async () => new InMemoryStateAdapter() as StateAdapter],
  ["file", async () => (await fileStates.open(fileStates.folder())) as StateAdapter],
])("claimDeliveries on the %s state", (_name, make) => {
  it("leases the due deliveries with no live lease, earliest due first, each once, up to the limit", async () => {
    const state = await make();
    const start = Date.now() + 1_000;
    await seed(state, start);
    await expectClaimsAfterSeed(state, start);
  });
});

describe("claimDeliveries on the file state, opened again", () => {
  it("claims the same from its log and from a snapshot", async () => {
    const start = Date.now() + 1_000;
    // The claims write: the snapshot is made of a copy of the folder as seed left it.
    await fileStates.reopenedFromLogAndSnapshot(
      (state) => seed(state, start),
      (state) => expectClaimsAfterSeed(state, start),
    );
  });
});
