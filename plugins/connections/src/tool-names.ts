import { createHash } from "node:crypto";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** A service's own tool name as the snake_case part of `<connection>__<tool>`. */
export function snakeToolName(name: string): string {
  const snake = name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .replace(/_+/g, "_");
  const safe = /^[a-z]/.test(snake) ? snake : `t_${snake}`;
  return safe || "tool";
}

/** Model providers refuse tool names longer than this (OpenAI and Anthropic: ^[a-zA-Z0-9_-]{1,64}$), and with them the whole request. */
export const MAX_TOOL_NAME_LENGTH = 64;

/** The room a connection's name must leave in MAX_TOOL_NAME_LENGTH for its tools' own names: a shortened name is its start, `_` and 8 hex digits. */
export const MIN_TOOL_PART_LENGTH = 16;

/** The longest connection name: `<connection>__` plus MIN_TOOL_PART_LENGTH characters of a tool's name still fit in MAX_TOOL_NAME_LENGTH. */
export const MAX_CONNECTION_NAME_LENGTH = MAX_TOOL_NAME_LENGTH - "__".length - MIN_TOOL_PART_LENGTH;

/** The first 8 hex digits of a service's own tool name's SHA-256: the same in every process, whatever else the service lists. */
function digest(original: string): string {
  return createHash("sha256").update(original).digest("hex").slice(0, 8);
}

/**
 * Give each tool of a connection a unique model-facing name that fits, with
 * `<connection>__`, in MAX_TOOL_NAME_LENGTH. A name depends only on the
 * service's own name and on which other names the service lists, never on
 * their order, so a run resumed after the service listed its tools in another
 * order calls the same tools:
 * - a longer one keeps its start and ends in a digest of the service's own name;
 * - names that snake-case alike (`getItem`, `get-item`, `get_item`) each end in
 *   a digest of their own name instead, but for the one already written as
 *   the snake_case name, which keeps it; a name no other collides with is
 *   never changed.
 * Throws AL_ERR_CONNECTION_DEFINITION when the connection's name leaves no
 * room (checkDefinition refuses such a name first).
 */
export function uniqueNames(names: string[], connection: string): string[] {
  const max = MAX_TOOL_NAME_LENGTH - connection.length - "__".length;
  if (max < MIN_TOOL_PART_LENGTH) throw connectionNameTooLong(connection);
  const digested = (base: string, original: string) => `${base.slice(0, max - 9).replace(/_+$/, "")}_${digest(original)}`;
  const bases = names.map((name) => {
    const snake = snakeToolName(name);
    return snake.length <= max ? snake : digested(snake, name);
  });
  const given = new Map<string, number>();
  for (const base of bases) given.set(base, (given.get(base) ?? 0) + 1);
  const chosen = names.map((name, index) => {
    const base = bases[index]!;
    return given.get(base) === 1 || name === base ? base : digested(base, name);
  });
  // Only a service listing the same name twice (or a name spelled like another's digest) is left to tell apart by order.
  const used = new Set<string>();
  return chosen.map((name) => {
    let unique = name;
    for (let count = 2; used.has(unique); count += 1) unique = `${name.slice(0, max - `_${count}`.length)}_${count}`;
    used.add(unique);
    return unique;
  });
}

/** A connection name too long for any `<connection>__<tool>` to fit MAX_TOOL_NAME_LENGTH. */
export function connectionNameTooLong(connection: string): AssemblyLineError {
  return new AssemblyLineError(
    "AL_ERR_CONNECTION_DEFINITION",
    `connection "${connection}": the name is ${connection.length} characters; its tools are named <connection>__<tool>, and model APIs refuse tool names over ${MAX_TOOL_NAME_LENGTH} characters, which leaves no room for the tools' own names`,
    { fix: `Name the connection in at most ${MAX_CONNECTION_NAME_LENGTH} characters.` },
  );
}

/** JSON Schema as the kernel's validator reads it: the service's `$schema` dialect marker dropped. */
export function plainSchema(schema: unknown): Record<string, unknown> {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return { type: "object" };
  const { $schema: _dialect, ...rest } = schema as Record<string, unknown>;
  return rest;
}

/**
 * A dereferenced schema as a tree: swagger-parser resolves a recursive `$ref`
 * (a Node whose children are Nodes) into an object that contains itself, which
 * no JSON can hold. Where a schema would contain one of its own ancestors, it
 * accepts any value instead.
 */
export function acyclic(value: unknown, ancestors: Set<object> = new Set()): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (ancestors.has(value)) return { description: "(recursive: the same shape as an enclosing value)" };
  ancestors.add(value);
  const copy = Array.isArray(value) ? value.map((item) => acyclic(item, ancestors)) : Object.fromEntries(Object.entries(value).map(([key, item]) => [key, acyclic(item, ancestors)]));
  ancestors.delete(value);
  return copy;
}
