import { describe, expect, it } from "vitest";
import { isoTimestamp } from "../src/index.js";

describe("isoTimestamp", () => {
  it("gives what Date's toISOString gives, in and across seconds, years and the epoch", () => {
    const times = [
      0, 1, 999, 1000, -1, -999, -1000, -1001, -1500,
      Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 0, 1), Date.UTC(2024, 1, 29, 12, 0, 0, 7),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), Date.UTC(-1, 0, 1), 8.64e15, -8.64e15, 1.5, -1.5,
    ];
    // Each followed by the other milliseconds of its second, so the cached part is used, and by an earlier second.
    for (const time of times) {
      for (const at of [time, time + 10, time + 99, time + 100, time - 1000]) {
        if (Math.abs(at) > 8.64e15) continue;
        expect(isoTimestamp(at)).toBe(new Date(at).toISOString());
      }
    }
    for (let at = Date.UTC(2026, 5, 1, 10, 0, 59, 990); at < Date.UTC(2026, 5, 1, 10, 1, 0, 20); at += 1) {
      expect(isoTimestamp(at)).toBe(new Date(at).toISOString());
    }
  });

  it("stays right while times from two or three seconds alternate (a write's time and a lease's expiry)", () => {
    const starts = [Date.UTC(2026, 0, 1, 0, 0, 0), Date.UTC(2026, 0, 1, 0, 0, 30), Date.UTC(2026, 0, 1, 0, 1, 0)];
    for (let offset = 0; offset < 50; offset += 1) {
      for (const start of starts) expect(isoTimestamp(start + offset * 7)).toBe(new Date(start + offset * 7).toISOString());
      expect(isoTimestamp(starts[0]! + offset)).toBe(new Date(starts[0]! + offset).toISOString());
    }
  });

  it("defaults to now", () => {
    const before = Date.now();
    const text = isoTimestamp();
    expect(Date.parse(text)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(text)).toBeLessThanOrEqual(Date.now());
  });

  it("throws as Date does for a time that is not one", () => {
    expect(() => isoTimestamp(Number.NaN)).toThrow(RangeError);
    expect(() => isoTimestamp(8.64e15 + 1)).toThrow(RangeError);
  });
});
