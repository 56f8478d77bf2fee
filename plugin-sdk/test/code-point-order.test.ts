import { describe, expect, it } from "vitest";
import { codePointKey, compareCodePoints, fromCodePointKey } from "../src/index.js";

/** Strings of units at the edges where UTF-16's order and code points' part, lone surrogates included. */
function randomStrings(count: number): string[] {
  const units = [0x2f, 0x61, 0xe9, 0xd7ff, 0xd800, 0xd83d, 0xdbff, 0xdc00, 0xde00, 0xdfff, 0xe000, 0xf7ff, 0xf800, 0xfffd, 0xffff];
  let seed = 11;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  return Array.from({ length: count }, () => String.fromCharCode(...Array.from({ length: random(5) }, () => units[random(units.length)]!)));
}

const sign = (n: number) => Math.sign(n);

describe("code-point order", () => {
  it("sorts characters above U+FFFF after U+E000-U+FFFF, as UTF-8 bytes and PostgreSQL's COLLATE \"C\" do", () => {
    const sorted = ["\u{1F600}", "\uffff", "\ue000", "\ud7ff", "a", "\u{10000}", "\uffffa", ""].sort(compareCodePoints);
    expect(sorted).toEqual(["", "a", "\ud7ff", "\ue000", "\uffff", "\uffffa", "\u{10000}", "\u{1F600}"]);
    const wellFormed = randomStrings(400).filter((text) => Buffer.from(text).toString() === text);
    for (const a of wellFormed.slice(0, 60)) for (const b of wellFormed) expect([a, b, sign(compareCodePoints(a, b))]).toEqual([a, b, Buffer.compare(Buffer.from(a), Buffer.from(b))]);
  });

  it("gives keys that `<` sorts as compareCodePoints sorts their strings, keep prefixes, and give back their strings", () => {
    const strings = randomStrings(300);
    for (const a of strings.slice(0, 80)) {
      const key = codePointKey(a);
      expect(fromCodePointKey(key)).toBe(a);
      for (const b of strings) {
        const other = codePointKey(b);
        expect([a, b, key < other ? -1 : key > other ? 1 : 0]).toEqual([a, b, sign(compareCodePoints(a, b))]);
        expect([a, b, other.startsWith(key)]).toEqual([a, b, b.startsWith(a)]);
      }
    }
    expect(codePointKey("/files/plain.txt")).toBe("/files/plain.txt");
  });
});
