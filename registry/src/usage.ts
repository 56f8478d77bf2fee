import type { RegistryEntry } from "./registry-data.js";

/**
 * The gateway.ts lines that put a plugin's adapters in their slots, for
 * `plugins add` and `plugins info` to print.
 */
export function gatewayUsage(entry: Pick<RegistryEntry, "package" | "provides">): string[] {
  if (entry.provides.length === 0) return [];
  const helpers = entry.provides.map((provide) => provide.export);
  return [
    'import { defineGateway } from "@assemblyline-agents/core";',
    `import { ${[...new Set(helpers)].join(", ")} } from "${entry.package}";`,
    "",
    "export default defineGateway({",
    ...entry.provides.map((provide) => `  ${provide.slot}: ${provide.export}(),`),
    "});",
  ];
}
