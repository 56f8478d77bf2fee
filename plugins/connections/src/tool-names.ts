import { createHash } from "node:crypto";

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

/**
 * Give each tool of a connection a unique model-facing name that fits, with
 * `<connection>__`, in MAX_TOOL_NAME_LENGTH: a longer one keeps its start and
 * ends in a digest of the service's own name, so it stays the same in every
 * process and distinct from its neighbours.
 */
export function uniqueNames(names: string[], connection: string): string[] {
  const max = Math.max(16, MAX_TOOL_NAME_LENGTH - connection.length - 2);
  const fit = (base: string, original: string) => (base.length <= max ? base : `${base.slice(0, max - 9).replace(/_+$/, "")}_${createHash("sha256").update(original).digest("hex").slice(0, 8)}`);
  const used = new Set<string>();
  return names.map((name) => {
    const base = fit(snakeToolName(name), name);
    let unique = base;
    for (let count = 2; used.has(unique); count += 1) unique = `${base.slice(0, max - `_${count}`.length)}_${count}`;
    used.add(unique);
    return unique;
  });
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
