import type { JsonValue } from "@assemblyline-agents/core";

/**
 * Where `value` stops being plain JSON, as a path and a reason; undefined when it
 * is plain JSON. Stricter than JSON.stringify, which silently drops or converts.
 *
 * Every step result and tool result passes through here, so the walk allocates
 * nothing for plain JSON: the path is spelled out only once a problem is found.
 */
export function findNonJson(value: unknown, path = "result"): string | undefined {
  const walk: JsonWalk = { keys: [], ancestors: [], undefinedKeysDropped: false };
  return jsonOf(value, walk) === NOT_JSON ? problemAt(path, walk) : undefined;
}

/** A tool's value as it is stored: plain JSON, or the reason it is not. */
export type CheckedJson = { json: JsonValue } | { problem: string };

/**
 * `value` checked as `findNonJson` checks it and, in the same walk, with every object key whose value
 * is undefined left out, at any depth, as JSON.stringify leaves it out (an optional field the tool had
 * no value for). Undefined anywhere else (the whole value, an array item) is still a problem: JSON would
 * turn it into null or nothing. Copies only the objects that lose a key (and those holding them): plain
 * JSON comes back as it is.
 */
export function jsonWithoutUndefinedKeys(value: unknown, path: string): CheckedJson {
  const walk: JsonWalk = { keys: [], ancestors: [], undefinedKeysDropped: true };
  const json = jsonOf(value, walk);
  return json === NOT_JSON ? { problem: problemAt(path, walk) } : { json: json as JsonValue };
}

/** What one walk carries down: the path so far, the objects holding the current value, and what it found. */
interface JsonWalk {
  keys: Array<string | number>;
  ancestors: object[];
  undefinedKeysDropped: boolean;
  problem?: string;
}

/** Returned up the walk once a problem is found; `walk.problem` says which, `walk.keys` where. */
const NOT_JSON: unique symbol = Symbol("not JSON");

function problemAt(path: string, walk: JsonWalk): string {
  let at = path;
  for (const key of walk.keys) at += typeof key === "number" ? `[${key}]` : `.${key}`;
  return `${at} ${walk.problem}`;
}

function notJson(walk: JsonWalk, problem: string): typeof NOT_JSON {
  walk.problem = problem;
  return NOT_JSON;
}

/**
 * `value` as plain JSON (the same value unless a key was dropped), or NOT_JSON with `walk.keys`
 * left holding the path to the problem.
 */
function jsonOf(value: unknown, walk: JsonWalk): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : notJson(walk, `is ${value}, which JSON cannot represent`);
  if (typeof value === "undefined") return notJson(walk, "is undefined; omit the key or use null");
  if (typeof value === "function") return notJson(walk, "is a function");
  if (typeof value === "bigint") return notJson(walk, "is a bigint; convert it to a string or number");
  if (typeof value === "symbol") return notJson(walk, "is a symbol");
  // Only a value's own ancestors make a cycle: the same object twice side by side is plain JSON.
  if (walk.ancestors.includes(value)) return notJson(walk, "is a circular reference");
  if (Array.isArray(value)) {
    walk.ancestors.push(value);
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      walk.keys.push(i);
      const item: unknown = value[i];
      const json = jsonOf(item, walk);
      if (json === NOT_JSON) return NOT_JSON;
      if (json !== item) (copy ??= value.slice())[i] = json;
      walk.keys.pop();
    }
    walk.ancestors.pop();
    return copy ?? value;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const kind = (value as object).constructor?.name ?? "object";
    const hint = kind === "Date" ? "; return date.toISOString()" : kind === "Map" ? "; return Object.fromEntries(map)" : "";
    return notJson(walk, `is a ${kind}, not a plain object${hint}`);
  }
  const record = value as Record<string, unknown>;
  walk.ancestors.push(record);
  let copy: Record<string, unknown> | undefined;
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue;
    const item = record[key];
    if (item === undefined && walk.undefinedKeysDropped) {
      copy ??= { ...record };
      delete copy[key];
      continue;
    }
    walk.keys.push(key);
    const json = jsonOf(item, walk);
    if (json === NOT_JSON) return NOT_JSON;
    if (json !== item) (copy ??= { ...record })[key] = json;
    walk.keys.pop();
  }
  walk.ancestors.pop();
  return copy ?? record;
}
