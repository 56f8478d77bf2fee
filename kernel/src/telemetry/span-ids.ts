import { hash } from "node:crypto";

/**
 * Ids derived from what a span describes: the same work always gets the same
 * id, in any process, so a re-export after a crash is a duplicate a backend can
 * drop, never a second span.
 */
export function traceIdFor(runId: string): string {
  return digest(`trace:${runId}`, 32);
}

export function spanIdFor(runId: string, ...parts: Array<string | number>): string {
  return digest(`span:${runId}:${parts.join(":")}`, 16);
}

function digest(text: string, hexChars: number): string {
  return hash("sha256", text, "hex").slice(0, hexChars);
}
