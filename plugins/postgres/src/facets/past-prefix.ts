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
