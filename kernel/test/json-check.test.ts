import { describe, expect, it } from "vitest";
import { findNonJson } from "../src/json-check.js";

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
