import { describe, expect, it } from "vitest";
import { partitionPoint } from "../src/state/partition-point.js";

describe("partitionPoint", () => {
  const sorted = [1, 3, 3, 3, 7, 9];

  it("finds where a value goes in a sorted list: before equal items for <, after them for <=", () => {
    expect(partitionPoint(sorted, (item) => item < 3)).toBe(1);
    expect(partitionPoint(sorted, (item) => item <= 3)).toBe(4);
    expect(partitionPoint(sorted, (item) => item < 0)).toBe(0);
    expect(partitionPoint(sorted, (item) => item < 100)).toBe(sorted.length);
    expect(partitionPoint([], () => true)).toBe(0);
  });

  it("agrees with a linear scan on every split of every list up to 40 items", () => {
    for (let length = 0; length <= 40; length += 1) {
      const items = Array.from({ length }, (_, index) => index);
      for (let split = 0; split <= length; split += 1) {
        expect(partitionPoint(items, (item) => item < split)).toBe(split);
      }
    }
  });

  it("searches only from start: the end of a run of paths under a prefix", () => {
    const paths = ["/a", "/b/1", "/b/2", "/b/3", "/c"];
    expect(partitionPoint(paths, (path) => path.startsWith("/b/"), 1)).toBe(4);
    expect(partitionPoint(paths, () => false, 3)).toBe(3);
    expect(partitionPoint(paths, () => true, 5)).toBe(5);
  });
});
