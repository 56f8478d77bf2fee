import type { ToolManifestEntry } from "./manifest.js";

/**
 * The built-in slots an agent goes without because it, or an agent above it,
 * removed them with disableTool(): a subagent never widens its parent, so a slot
 * disabled above stays removed unless the subagent overrides it with its own
 * tools/<name>.ts. The build checks skills against these; the runtime leaves
 * them out of each subagent's table.
 */
export function removedSlots(tools: readonly ToolManifestEntry[], removedAbove: ReadonlySet<string> = new Set()): Set<string> {
  const removed = new Set(removedAbove);
  for (const entry of tools) {
    if (entry.kind === "disabled") removed.add(entry.name);
    else if (entry.kind === "override") removed.delete(entry.name);
  }
  return removed;
}
