import { describe, expect, it } from "vitest";
import { UsageRecords, type UsageRecord } from "../src/index.js";

const usage = (id: string, runId: string, conversationId: string | null, inputTokens = 1): UsageRecord => ({
  id, runId, conversationId, provider: "p", model: "m", inputTokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, createdAt: "2030-01-01T00:00:00.000Z",
});
const ids = (records: UsageRecord[]) => records.map((record) => record.id);

describe("UsageRecords", () => {
  it("lists by run, by conversation, by both or all, in the order first recorded", () => {
    const records = new UsageRecords();
    for (const record of [usage("u1", "r1", "c1"), usage("u2", "r2", null), usage("u3", "r1", "c1"), usage("u4", "r3", "c1"), usage("u5", "r2", "c2")]) {
      expect(records.put(record)).toBe(false);
    }
    expect(ids(records.list({ runId: "r1" }))).toEqual(["u1", "u3"]);
    expect(ids(records.list({ runId: "r2" }))).toEqual(["u2", "u5"]);
    expect(ids(records.list({ conversationId: "c1" }))).toEqual(["u1", "u3", "u4"]);
    expect(ids(records.list({ runId: "r2", conversationId: "c2" }))).toEqual(["u5"]);
    expect(ids(records.list({ runId: "r1", conversationId: "c2" }))).toEqual([]);
    expect(ids(records.list({ runId: "nobody" }))).toEqual([]);
    expect(ids(records.list({}))).toEqual(["u1", "u2", "u3", "u4", "u5"]);
    expect(ids([...records.values()])).toEqual(["u1", "u2", "u3", "u4", "u5"]);
    expect(records.size).toBe(5);
    expect(records.has("u3")).toBe(true);
  });

  it("replaces a record with an id it holds in its place, also when its run or conversation changed", () => {
    const records = new UsageRecords();
    for (const record of [usage("u1", "r1", "c1"), usage("u2", "r2", "c2"), usage("u3", "r1", "c1"), usage("u4", "r2", "c2")]) records.put(record);
    expect(records.put(usage("u3", "r1", "c1", 7))).toBe(true);
    expect(records.list({ runId: "r1" }).map((record) => record.inputTokens)).toEqual([1, 7]);
    // u3 moves to r2 and c2, between u2 and u4 by when it was first recorded; u1 moves out of any conversation.
    records.put(usage("u3", "r2", "c2"));
    records.put(usage("u1", "r1", null));
    expect(ids(records.list({ runId: "r1" }))).toEqual(["u1"]);
    expect(ids(records.list({ runId: "r2" }))).toEqual(["u2", "u3", "u4"]);
    expect(ids(records.list({ conversationId: "c2" }))).toEqual(["u2", "u3", "u4"]);
    expect(ids(records.list({ conversationId: "c1" }))).toEqual([]);
    expect(ids(records.list({}))).toEqual(["u1", "u2", "u3", "u4"]);
    expect(records.size).toBe(4);
  });
});
