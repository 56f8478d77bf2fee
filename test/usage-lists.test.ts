import { describe, expect, it } from "vitest";
import type { StateAdapter, UsageRecord } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { useFileStates } from "./support/file-states.js";

const fileStates = useFileStates("al-usage-lists-");

/** 30 model calls' usage over 7 runs and 3 conversations (and none), runs interleaved, each recorded twice. */
async function seed(state: StateAdapter): Promise<void> {
  for (let index = 0; index < 30; index += 1) {
    const record: UsageRecord = {
      id: `usage_${String(index).padStart(2, "0")}`,
      runId: `run_${index % 7}`,
      conversationId: index % 7 === 6 ? null : `c${index % 3}`,
      provider: "test",
      model: "model",
      inputTokens: index,
      outputTokens: 1,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0.001,
      createdAt: new Date(Date.UTC(2030, 0, 1, 0, 0, index)).toISOString(),
    };
    await state.recordUsage(record);
    await state.recordUsage({ ...record, inputTokens: 999 });
  }
}

const FILTERS = [{ runId: "run_0" }, { runId: "run_6" }, { conversationId: "c1" }, { runId: "run_2", conversationId: "c2" }, { runId: "run_2", conversationId: "c0" }, { runId: "none" }, {}];

/** Each filter lists the matching records of the whole table, in the order recorded, each as first recorded. */
async function expectListsOf(state: StateAdapter): Promise<void> {
  const all = await state.listUsage({});
  expect(all.map((record) => record.id)).toEqual(Array.from({ length: 30 }, (_, index) => `usage_${String(index).padStart(2, "0")}`));
  expect(all.every((record) => record.inputTokens !== 999)).toBe(true);
  for (const filter of FILTERS) {
    const expected = all.filter(
      (record) => (filter.runId === undefined || record.runId === filter.runId) && (filter.conversationId === undefined || record.conversationId === filter.conversationId),
    );
    expect(await state.listUsage(filter), JSON.stringify(filter)).toEqual(expected);
  }
  expect((await state.listUsage({ runId: "run_6" })).every((record) => record.conversationId === null)).toBe(true);
  expect(await state.listUsage({ runId: "run_6" })).toHaveLength(4);
}

describe.each([
  ["in-memory", async () => new InMemoryStateAdapter() as StateAdapter],
  ["file", async () => (await fileStates.open(fileStates.folder())) as StateAdapter],
])("listUsage on the %s state", (_name, make) => {
  it("lists a run's or a conversation's usage, in the order recorded, each record once", async () => {
    const state = await make();
    await seed(state);
    await expectListsOf(state);
  });
});

describe("listUsage on the file state, opened again", () => {
  it("lists the same from its log and from a snapshot", async () => {
    await fileStates.reopenedFromLogAndSnapshot(seed, expectListsOf);
  });
});
