/**
 * Where `value` stops being plain JSON, as a path and a reason; undefined when it
 * is plain JSON. Stricter than JSON.stringify, which silently drops or converts.
 *
 * Every step result and tool result passes through here, so the walk allocates
 * nothing for plain JSON: the path is spelled out only once a problem is found.
 */
export function findNonJson(value: unknown, path = "result", options: JsonCheckOptions = {}): string | undefined {
  const keys: Array<string | number> = [];
  const problem = problemOf(value, keys, [], options.undefinedKeysDropped === true);
  if (problem === undefined) return undefined;
  let at = path;
  for (const key of keys) at += typeof key === "number" ? `[${key}]` : `.${key}`;
  return `${at} ${problem}`;
}

export interface JsonCheckOptions {
  /**
   * An object key whose value is undefined passes: the caller stores the value through
   * `withoutUndefinedKeys`, which leaves such keys out as JSON.stringify does. Undefined
   * anywhere else (the whole value, an array item) is still a problem: JSON would turn it into null or nothing.
   */
  undefinedKeysDropped?: boolean;
}

/**
 * `value` with every object key whose value is undefined left out, at any depth, as JSON.stringify leaves
 * it out. For a value `findNonJson` passed with `undefinedKeysDropped`: plain objects and arrays only, no
 * cycles. Copies only the objects that lose a key (and those holding them): plain JSON comes back as it is.
 */
export function withoutUndefinedKeys<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const cleaned = withoutUndefinedKeys(item);
      if (cleaned !== item) (copy ??= value.slice())[i] = cleaned;
    }
    return (copy ?? value) as T;
  }
  const record = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(record)) {
    const item = record[key];
    if (item === undefined) {
      copy ??= { ...record };
      delete copy[key];
      continue;
    }
    const cleaned = withoutUndefinedKeys(item);
    if (cleaned !== item) (copy ??= { ...record })[key] = cleaned;
  }
  return (copy ?? value) as T;
}

/** The reason `value` is not plain JSON, with `keys` left holding the path to it; undefined when it is. */
function problemOf(value: unknown, keys: Array<string | number>, ancestors: object[], undefinedKeysDropped: boolean): string | undefined {
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
      const problem = problemOf(value[i], keys, ancestors, undefinedKeysDropped);
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
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined && undefinedKeysDropped) continue;
    keys.push(key);
    const problem = problemOf(item, keys, ancestors, undefinedKeysDropped);
    if (problem !== undefined) return problem;
    keys.pop();
  }
  ancestors.pop();
  return undefined;
}
