/**
 * The least string above every string that starts with `prefix` (in the primary key's byte order,
 * which is code-point order): `prefix` with its last character raised by one. Undefined where that
 * is not a character of its own (no prefix, a surrogate, U+FFFF): callers then filter instead.
 */
export function pastPrefix(prefix: string): string | undefined {
  const last = prefix.charCodeAt(prefix.length - 1);
  if (Number.isNaN(last) || (last >= 0xd7ff && last <= 0xdfff) || last === 0xffff) return undefined;
  return prefix.slice(0, -1) + String.fromCharCode(last + 1);
}

/** Adds a statement's parameter and gives its placeholder. */
export type Parameter = (value: string) => string;

/**
 * The conditions on `column` that hold for exactly the values starting with `prefix`: a range of the
 * key (none for an empty prefix), or `starts_with` where the range has no end of its own. The server
 * plans a statement with a range of parameters once per connection; with `starts_with` of a
 * parameter it planned the statement again at every call (0.1-0.3 ms each beside 100,000 rows).
 */
export function underPrefix(column: string, prefix: string, parameter: Parameter): string[] {
  if (prefix === "") return [];
  const past = pastPrefix(prefix);
  return past === undefined ? [`starts_with(${column}, ${parameter(prefix)})`] : [`${column} >= ${parameter(prefix)}`, `${column} < ${parameter(past)}`];
}

/** A statement's parameters, named `$n` as they are added. */
export function parameters(values: unknown[] = []): Parameter {
  return (value) => {
    values.push(value);
    return `$${values.length}::text`;
  };
}
