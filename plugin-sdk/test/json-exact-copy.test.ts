import { describe, expect, it } from "vitest";
import { jsonExactCopy } from "../src/index.js";

const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe("jsonExactCopy", () => {
  it("copies plain JSON data exactly as a JSON round trip does, sharing no object with it", () => {
    const value = { "2": "key order", b: [1, -1.5, 1e300, "é\ud800", true, null, { c: [] }], a: {}, empty: "", "1": 0 };
    const copy = jsonExactCopy(value)!;
    expect(copy).toStrictEqual(roundTrip(value));
    expect(Object.keys(copy)).toEqual(Object.keys(roundTrip(value) as object));
    expect(copy).not.toBe(value);
    expect(copy.b).not.toBe(value.b);
    expect(copy.b[6]).not.toBe(value.b[6]);
  });

  it.each([
    ["an undefined property", { a: undefined }],
    ["an undefined array item", [undefined]],
    ["a hole in an array", [1, , 3]],
    ["a function", { f: () => 1 }],
    ["NaN", { n: Number.NaN }],
    ["Infinity", [Number.POSITIVE_INFINITY]],
    ["-0", { z: -0 }],
    ["a Date", { at: new Date(0) }],
    ["an object with toJSON", { v: { toJSON: () => "x" } }],
    ["a Map", { m: new Map([["a", 1]]) }],
    ["a class instance", { c: new (class Point { x = 1 })() }],
    ["an own __proto__ key", JSON.parse('{"__proto__": {"polluted": true}}')],
    ["nesting deeper than 64", Array.from({ length: 70 }).reduce<unknown>((inner) => [inner], 1)],
  ])("refuses %s, which a round trip changes or it leaves to JSON.parse", (_label, value) => {
    expect(jsonExactCopy(value)).toBeUndefined();
  });

  it("refuses a BigInt, leaving the error to JSON.stringify", () => {
    expect(jsonExactCopy({ n: 1n })).toBeUndefined();
    expect(() => JSON.stringify({ n: 1n })).toThrow(TypeError);
  });
});
