import { hash } from "node:crypto";
import { canonicalJson } from "@assemblyline-agents/core";

export { canonicalJson };

export function sha256(data: string | Uint8Array): string {
  // One call, no Hash object: 2.5x faster than createHash for the small inputs hashed per tool call.
  return hash("sha256", data, "hex");
}

export function digestJson(value: unknown): string {
  return sha256(canonicalJson(value));
}
