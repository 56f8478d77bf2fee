/**
 * Where `value` stops being plain JSON, as a path and a reason; undefined when it
 * is plain JSON. Stricter than JSON.stringify, which silently drops or converts.
 *
 * Every step result and tool result passes through here, so the walk allocates
 * nothing for plain JSON: the path is spelled out only once a problem is found.
 */
export function findNonJson(value: unknown, path = "result"): string | undefined {
  const keys: Array<string | number> = [];
  const problem = problemOf(value, keys, []);
  if (problem === undefined) return undefined;
  let at = path;
  for (const key of keys) at += typeof key === "number" ? `[${key}]` : `.${key}`;
  return `${at} ${problem}`;
}

/** The reason `value` is not plain JSON, with `keys` left holding the path to it; undefined when it is. */
function problemOf(value: unknown, keys: Array<string | number>, ancestors: object[]): string | undefined {
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number") return Number.isFinite(value) ? undefined : `is ${value}, which JSON cannot represent`;
  if (typeof value === "undefined") return "is undefined; omit the key or use null";
  if (typeof value === "function") return "is a function";
  if (typeof value === "bigint") return "is a bigint; convert it to a string or number";
  if (typeof value === "symbol") return "is a symbol";
  // Only a value's own ancestors make a cycle: the same object twice side by side is plain JSON.
  if (ancestors.includes(value as object)) return "is a circular reference";
  if (Array.isArray(value)) {
    ancestors.push(value);
    for (let i = 0; i < value.length; i++) {
      keys.push(i);
      const problem = problemOf(value[i], keys, ancestors);
      if (problem !== undefined) return problem;
      keys.pop();
    }
    ancestors.pop();
    return undefined;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const kind = (value as object).constructor?.name ?? "object";
    const hint = kind === "Date" ? "; return date.toISOString()" : kind === "Map" ? "; return Object.fromEntries(map)" : "";
    return `is a ${kind}, not a plain object${hint}`;
  }
  ancestors.push(value as object);
  for (const key in value as Record<string, unknown>) {
    if (!Object.hasOwn(value as object, key)) continue;
    keys.push(key);
    const problem = problemOf((value as Record<string, unknown>)[key], keys, ancestors);
    if (problem !== undefined) return problem;
    keys.pop();
  }
  ancestors.pop();
  return undefined;
}
