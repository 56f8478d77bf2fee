import { describe, expect, it } from "vitest";
import { findNonJson, jsonWithoutUndefinedKeys } from "../src/json-check.js";

describe("findNonJson", () => {
  it("passes plain JSON, also an object that appears twice side by side", () => {
    const shared = { n: 1 };
    expect(findNonJson({ a: [1, "x", true, null, { b: [] }], c: shared, d: [shared, shared] })).toBeUndefined();
    expect(findNonJson(Object.assign(Object.create(null), { n: 1 }))).toBeUndefined();
  });

  it("names the path to the first value JSON cannot hold, and why", () => {
    class Point {}
    const cases: Array<[unknown, string]> = [
      [{ a: { b: [0, Number.NaN] } }, "result.a.b[1] is NaN, which JSON cannot represent"],
      [{ list: [{ gone: undefined }] }, "result.list[0].gone is undefined; omit the key or use null"],
      [{ f: () => 1 }, "result.f is a function"],
      [{ big: 1n }, "result.big is a bigint; convert it to a string or number"],
      [[Symbol("s")], "result[0] is a symbol"],
      [{ when: new Date(0) }, "result.when is a Date, not a plain object; return date.toISOString()"],
      [{ map: new Map() }, "result.map is a Map, not a plain object; return Object.fromEntries(map)"],
      [{ p: new Point() }, "result.p is a Point, not a plain object"],
      [Number.POSITIVE_INFINITY, "result is Infinity, which JSON cannot represent"],
    ];
    for (const [value, message] of cases) expect(findNonJson(value)).toBe(message);
    expect(findNonJson({ x: undefined }, 'step "k" result')).toBe('step "k" result.x is undefined; omit the key or use null');
  });

  it("names a cycle where it closes, and checks what follows a plain value fully", () => {
    const loop: Record<string, unknown> = { ok: 1 };
    loop.inner = { back: loop };
    expect(findNonJson(loop)).toBe("result.inner.back is a circular reference");
    const list: unknown[] = [1];
    list.push(list);
    expect(findNonJson({ list })).toBe("result.list[1] is a circular reference");
    expect(findNonJson({ first: { fine: [1, 2] }, second: { bad: [undefined] } })).toBe("result.second.bad[0] is undefined; omit the key or use null");
  });
});

describe("jsonWithoutUndefinedKeys", () => {
  it("leaves out object keys whose value is undefined, at any depth, and copies only what lost a key", () => {
    const untouched = { kept: [1, { n: 2 }] };
    const value = { a: 1, gone: undefined, nested: { list: [{ b: 2, gone: undefined }] }, untouched };
    const checked = jsonWithoutUndefinedKeys(value, "t result");
    expect(checked).toEqual({ json: { a: 1, nested: { list: [{ b: 2 }] }, untouched } });
    const json = "json" in checked ? (checked.json as Record<string, unknown>) : {};
    expect(json.untouched).toBe(untouched);
    expect(Object.keys(json)).toEqual(["a", "nested", "untouched"]);
    expect(value).toEqual({ a: 1, gone: undefined, nested: { list: [{ b: 2, gone: undefined }] }, untouched });
  });

  it("returns plain JSON itself, without a copy", () => {
    const plain = { a: [1, "x", { b: null }], c: { d: true } };
    const checked = jsonWithoutUndefinedKeys(plain, "t result");
    expect("json" in checked && checked.json).toBe(plain);
  });

  it("names the first value JSON cannot hold as findNonJson does; undefined outside an object key is still one", () => {
    expect(jsonWithoutUndefinedKeys({ skipped: undefined, list: [1, undefined] }, "t result")).toEqual({ problem: "t result.list[1] is undefined; omit the key or use null" });
    expect(jsonWithoutUndefinedKeys(undefined, "t result")).toEqual({ problem: "t result is undefined; omit the key or use null" });
    expect(jsonWithoutUndefinedKeys({ gone: undefined, when: new Date(0) }, "t toModelOutput")).toEqual({
      problem: "t toModelOutput.when is a Date, not a plain object; return date.toISOString()",
    });
    const loop: Record<string, unknown> = { gone: undefined };
    loop.inner = { back: loop };
    expect(jsonWithoutUndefinedKeys(loop, "t result")).toEqual({ problem: "t result.inner.back is a circular reference" });
  });
});
