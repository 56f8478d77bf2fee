import { AssemblyLineError } from "../errors.js";

/** Nesting past this depth is left to JSON.parse (the caller's fallback), which has no stack limit of ours. */
const MAX_DEPTH = 64;

/**
 * A copy of `value` that is exactly what `JSON.parse(JSON.stringify(value))` would
 * give, or undefined when the round trip would change it: an undefined, function
 * or symbol value, a non-finite number or -0, an object that is not plain (a Date,
 * a Map, a class instance), an own `__proto__` key, very deep nesting.
 *
 * A state adapter keeps this copy of what it stores (the file state beside the
 * JSON text it logs), so memory holds what a replay rebuilds without parsing
 * back every record it wrote; when the copy is refused, the caller parses.
 */
export function jsonExactCopy<T>(value: T): T | undefined {
  try {
    return copyValue(value, 0) as T;
  } catch (error) {
    if (error === NOT_EXACT) return undefined;
    throw error;
  }
}

const NOT_EXACT = Symbol("not exact");

function copyValue(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value) || Object.is(value, -0)) throw NOT_EXACT;
      return value;
    case "object":
      break;
    default:
      throw NOT_EXACT;
  }
  if (value === null) return null;
  if (depth > MAX_DEPTH) throw NOT_EXACT;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) throw NOT_EXACT;
    const out = new Array<unknown>(value.length);
    // A hole reads as undefined, which is refused: JSON would make it null.
    for (let index = 0; index < value.length; index += 1) out[index] = copyValue(value[index], depth + 1);
    return out;
  }
  const proto = Object.getPrototypeOf(value);
  // A Date or Buffer (whose toJSON JSON would call) is not plain; an own toJSON is a function, refused below.
  if (proto !== Object.prototype && proto !== null) throw NOT_EXACT;
  const out: Record<string, unknown> = {};
  // for-in (own keys only, as JSON takes them) in the order Object.keys gives, without allocating that array.
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (key === "__proto__") throw NOT_EXACT;
    out[key] = copyValue((value as Record<string, unknown>)[key], depth + 1);
  }
  return out;
}

/**
 * `value` as a durable state stores it and reads it back: what
 * `JSON.parse(JSON.stringify(value))` gives (a Date becomes its ISO text, an
 * undefined field is left out, NaN and Infinity become null), copied fast when
 * the round trip changes nothing. A state that keeps values in memory stores
 * this, so a value reads back there as it does from a file or a database.
 * Undefined stays undefined; a BigInt or a cycle is AL_ERR_STATE_INPUT_INVALID.
 */
export function asStoredJson<T>(value: T, operation = "a state write"): T {
  if (value === undefined) return value;
  const exact = jsonExactCopy(value);
  if (exact !== undefined) return exact;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `${operation}: the value is not JSON (${error instanceof Error ? error.message : String(error)})`, {
      fix: "Store only JSON values (no BigInt, no cycles); convert dates and buffers to strings first.",
      cause: error,
    });
  }
  // A function or symbol alone has no JSON text: stored as nothing, as a JSON column would hold null.
  return (text === undefined ? null : JSON.parse(text)) as T;
}
