/** Nesting past this depth is copied by structuredClone, which also handles cycles. */
const MAX_FAST_DEPTH = 64;

class TooDeep extends Error {}

/**
 * A private deep copy of a stored value, as `structuredClone` makes it, but fast for
 * what state holds: plain objects, arrays and primitives are copied directly (most
 * of the cost of structuredClone is its serializer, not the copy); anything else
 * (Date, Map, typed arrays, a cycle, very deep nesting) goes to structuredClone, so
 * the result and the errors (a function throws DataCloneError) stay the same.
 */
export function copyStateValue<T>(value: T): T {
  if (typeof value !== "object" || value === null) return typeof value === "function" || typeof value === "symbol" ? structuredClone(value) : value;
  try {
    return copyPlain(value, 0) as T;
  } catch (error) {
    if (error instanceof TooDeep) return structuredClone(value);
    throw error;
  }
}

function copyPlain(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null) {
    // structuredClone refuses these; throwing the same error keeps "nothing changes" for callers.
    if (typeof value === "function" || typeof value === "symbol") return structuredClone(value);
    return value;
  }
  if (depth > MAX_FAST_DEPTH) throw new TooDeep();
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return structuredClone(value);
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyPlain(value[i], depth + 1);
    return out;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key in value) out[key] = copyPlain((value as Record<string, unknown>)[key], depth + 1);
  return out;
}
