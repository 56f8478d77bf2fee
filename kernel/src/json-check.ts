/**
 * Where `value` stops being plain JSON, as a path and a reason; undefined when it
 * is plain JSON. Stricter than JSON.stringify, which silently drops or converts.
 */
export function findNonJson(value: unknown, path = "result", seen = new Set<object>()): string | undefined {
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number") return Number.isFinite(value) ? undefined : `${path} is ${value}, which JSON cannot represent`;
  if (typeof value === "undefined") return `${path} is undefined; omit the key or use null`;
  if (typeof value === "function") return `${path} is a function`;
  if (typeof value === "bigint") return `${path} is a bigint; convert it to a string or number`;
  if (typeof value === "symbol") return `${path} is a symbol`;
  if (seen.has(value)) return `${path} is a circular reference`;
  if (Array.isArray(value)) {
    seen.add(value);
    for (let i = 0; i < value.length; i++) {
      const problem = findNonJson(value[i], `${path}[${i}]`, seen);
      if (problem) return problem;
    }
    seen.delete(value);
    return undefined;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const kind = (value as object).constructor?.name ?? "object";
    const hint = kind === "Date" ? "; return date.toISOString()" : kind === "Map" ? "; return Object.fromEntries(map)" : "";
    return `${path} is a ${kind}, not a plain object${hint}`;
  }
  seen.add(value);
  for (const [key, entry] of Object.entries(value)) {
    const problem = findNonJson(entry, `${path}.${key}`, seen);
    if (problem) return problem;
  }
  seen.delete(value);
  return undefined;
}
