/**
 * Code-point order: the order in which every state store sorts what it lists (paths, ids, names),
 * so that a listing reads the same whichever store holds it. It is the order of UTF-8 bytes, which
 * PostgreSQL's `COLLATE "C"` gives. JavaScript's `<` compares UTF-16 code units instead, and sorts
 * a character above U+FFFF (two surrogate units, 0xD800-0xDFFF) before one of U+E000-U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index += 1) {
    const x = a.charCodeAt(index);
    const y = b.charCodeAt(index);
    if (x !== y) return x >= 0xd800 && y >= 0xd800 ? raiseSurrogate(x) - raiseSurrogate(y) : x - y;
  }
  return a.length - b.length;
}

/** Code units that sort differently by code point than by code unit: the surrogates and U+E000-U+FFFF. */
const HIGH_UNIT = /[\ud800-\uffff]/;
const HIGH_UNITS = /[\ud800-\uffff]/g;

/**
 * A key that `<` sorts as compareCodePoints sorts the strings the keys are of: each surrogate unit
 * moved above U+E000-U+FFFF, those moved down to make room. For a sorted set of many strings:
 * comparing keys with `<` runs in the engine, and took half the time of compareCodePoints (a sorted
 * set of 100,000 paths). A string without units from U+D800 up (nearly every path) is its own key;
 * a key of a string that starts with `p` starts with the key of `p`, so a prefix's strings are still
 * the keys from its key on.
 */
export function codePointKey(text: string): string {
  return HIGH_UNIT.test(text) ? text.replace(HIGH_UNITS, (unit) => String.fromCharCode(raiseSurrogate(unit.charCodeAt(0)))) : text;
}

/** The string a codePointKey is of. */
export function fromCodePointKey(key: string): string {
  return HIGH_UNIT.test(key) ? key.replace(HIGH_UNITS, (unit) => String.fromCharCode(lowerSurrogate(unit.charCodeAt(0)))) : key;
}

/** A unit from U+D800 up, moved to its place in code-point order: the surrogates above U+E000-U+FFFF. */
function raiseSurrogate(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

function lowerSurrogate(unit: number): number {
  return unit >= 0xf800 ? unit - 0x2000 : unit + 0x800;
}
