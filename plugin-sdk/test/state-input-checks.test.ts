import { describe, expect, it } from "vitest";
import { checkNewEvents, checkNewRun, checkRunListFilter, checkSeqNumber, checkedIsoTime, checkedUsageRecord, isPlainJsonObject, type NewRun, type UsageRecord } from "../src/index.js";
import { runInNewContext } from "node:vm";

const usage = (createdAt: string): UsageRecord => ({
  id: "u1", runId: "r1", conversationId: null, provider: "p", model: "m", inputTokens: 1, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, createdAt,
});

describe("checkedIsoTime", () => {
  it("gives a time with an offset as ISO UTC, and ISO UTC text back as it is", () => {
    expect(checkedIsoTime("op", "at", "2024-01-01T12:00:00+05:00")).toBe("2024-01-01T07:00:00.000Z");
    expect(checkedIsoTime("op", "at", "2024-01-01T07:00:00Z")).toBe("2024-01-01T07:00:00.000Z");
    expect(checkedIsoTime("op", "at", "2024-01-01T07:00:00.000Z")).toBe("2024-01-01T07:00:00.000Z");
    expect(() => checkedIsoTime("op", "at", "yesterday")).toThrow('op: at must be an ISO-8601 time, got "yesterday"');
    expect(() => checkedIsoTime("op", "at", new Date(0))).toThrow("op: at must be an ISO-8601 time, got the Date 1970-01-01T00:00:00.000Z");
  });
});

describe("checkedUsageRecord", () => {
  it("keeps the record it is given when its createdAt is ISO UTC already (the runtime's), so a store copies nothing", () => {
    const record = usage("2024-01-01T07:00:00.000Z");
    expect(checkedUsageRecord("recordUsage", record)).toBe(record);
  });

  it("gives a copy with createdAt as ISO UTC for a time with an offset, leaving the given record alone", () => {
    const record = usage("2024-01-01T12:00:00+05:00");
    expect(checkedUsageRecord("recordUsage", record)).toEqual({ ...record, createdAt: "2024-01-01T07:00:00.000Z" });
    expect(record.createdAt).toBe("2024-01-01T12:00:00+05:00");
  });
});

describe("checkRunListFilter", () => {
  it("gives the page size as whole runs, at least one, and none when the filter has no limit", () => {
    expect(checkRunListFilter({})).toBeUndefined();
    expect(checkRunListFilter({ limit: 2.5 })).toBe(2);
    expect(checkRunListFilter({ limit: 0 })).toBe(1);
    expect(checkRunListFilter({ limit: -3 })).toBe(1);
  });

  it("refuses a limit that is no finite number and a status no run has", () => {
    expect(() => checkRunListFilter({ limit: Number.NaN })).toThrow("listRuns: filter.limit must be a number of runs per page (left out: the store's default), got NaN");
    expect(() => checkRunListFilter({ status: ["queued", "bogus" as never] })).toThrow('listRuns: filter.status[1] must be one of queued, running, waiting_approval, waiting_input, completed, failed, got "bogus"');
  });
});

describe("checkSeqNumber", () => {
  it("takes whole numbers from 0 and refuses a fraction, a negative, NaN and text", () => {
    expect(() => checkSeqNumber("op", "seq", 0)).not.toThrow();
    expect(() => checkSeqNumber("op", "seq", 12)).not.toThrow();
    for (const seq of [1.5, -1, Number.NaN, "2"]) expect(() => checkSeqNumber("op", "seq", seq)).toThrow(/op: seq must be a whole number >= 0/);
  });
});

describe("plain JSON objects (run input and metadata, event data)", () => {
  const run = (metadata: unknown): NewRun => ({ id: "r1", agentId: "a", agentRevision: "v", modelSpec: "m", input: { message: "hi", metadata } }) as NewRun;
  class Point {
    x = 1;
  }
  const notKept: [string, unknown][] = [
    ["a Date", new Date(0)],
    ["an object with toJSON", { toJSON: () => "text" }],
    ["a class instance", new Point()],
    ["a Map", new Map()],
  ];

  it("takes objects JSON gives back as the same object: literals, null-prototype objects, another realm's", () => {
    for (const value of [{}, { nested: { at: "2024" } }, Object.create(null) as object, runInNewContext("({ a: 1 })") as object]) {
      expect(isPlainJsonObject(value)).toBe(true);
      expect(() => checkNewRun("createRun", run(value))).not.toThrow();
      expect(() => checkNewEvents("appendEvents", [{ type: "x", data: value as never }])).not.toThrow();
    }
  });

  it("refuses what JSON writes as something else, naming the field, so no store keeps a row its reader refuses", () => {
    for (const [name, value] of notKept) {
      expect(isPlainJsonObject(value), name).toBe(false);
      expect(() => checkNewRun("createRun", run(value)), name).toThrow(/createRun: run\.input\.metadata must be a plain JSON object/);
      expect(() => checkNewEvents("appendEvents", [{ type: "x", data: value as never }]), name).toThrow(/appendEvents: events\[0\]\.data must be a plain JSON object/);
    }
    expect(() => checkNewRun("createRun", { ...run({}), input: new Date(0) as never })).toThrow(/run\.input must be a plain JSON object/);
    expect(() => checkNewRun("createRun", run(new Date(0)))).toThrow("got the Date 1970-01-01T00:00:00.000Z");
  });
});
