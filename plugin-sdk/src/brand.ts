/**
 * Brands mark the objects that authoring helpers return, so the compiler and the
 * kernel recognise them without `instanceof`: two copies of this package (one in
 * the user's folder, one in the host) must still agree on what a tool is.
 */
export const BRAND_VERSION = 1 as const;

export type Branded<T extends string> = { readonly $$type: T; readonly $$version: typeof BRAND_VERSION };

export function brand<T extends string, O extends object>(type: T, value: O): O & Branded<T> {
  return Object.freeze({ ...value, $$type: type, $$version: BRAND_VERSION }) as O & Branded<T>;
}

export function hasBrand<T extends string>(value: unknown, type: T): value is Branded<T> {
  return typeof value === "object" && value !== null && (value as { $$type?: unknown }).$$type === type;
}
