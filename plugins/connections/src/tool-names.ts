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

/** Give each tool of a connection a unique model-facing name. */
export function uniqueNames(names: string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((name) => {
    const base = snakeToolName(name);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    return count === 0 ? base : `${base}_${count + 1}`;
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
