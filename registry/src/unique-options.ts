import { randomBytes } from "node:crypto";

/**
 * Kits need an empty store per test. For adapters on a shared server, `{{unique}}`
 * in a string option (e.g. `{ "schema": "verify_{{unique}}" }`) becomes a fresh
 * token each time the options are used.
 */
export function uniquePerTest(options: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!options) return options;
  const token = randomBytes(6).toString("hex");
  return JSON.parse(JSON.stringify(options).replaceAll("{{unique}}", token)) as Record<string, unknown>;
}
