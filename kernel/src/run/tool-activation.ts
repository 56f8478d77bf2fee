import { AssemblyLineError, type JsonValue, type RunEvent } from "@assemblyline-agents/core";
import type { RunScope } from "./run-scope.js";
import { toModelToolSpec } from "./tool-table.js";

export const TOOLS_ACTIVATED = "tools.activated";

/**
 * Per run, the names an activation is recording now, with its record: another activation of the run made
 * meanwhile (tool calls run in parallel) waits for that record instead of recording and offering them again.
 */
const activating = new WeakMap<RunScope, Map<string, Promise<void>>>();

/**
 * Offer more tools to the model for the rest of a run, durably: a
 * `tools.activated` event records the names, so a resume (on any replica)
 * offers the same set. tool_describe promotes the tool it describes; a skill
 * activates its `skill`-visibility tools (`source: "skill:<name>"`). Names
 * already offered, or being activated by a call beside this one, are skipped
 * (recorded by this call after all when that call's record fails); returns
 * the names this call recorded.
 */
export async function activateTools(scope: RunScope, names: string[], source: string): Promise<string[]> {
  let underWay = activating.get(scope);
  if (!underWay) activating.set(scope, (underWay = new Map()));
  const fresh: string[] = [];
  const others = new Map<string, Promise<void>>();
  for (const name of new Set(names)) {
    // Already offered (a discovery tool among them): nothing to activate, and nothing wrong.
    if (scope.visible.has(name)) continue;
    const recording = underWay.get(name);
    if (recording) {
      others.set(name, recording);
      continue;
    }
    const entry = scope.table.get(name);
    if (!entry || entry.visibility === "hidden" || entry.bridge) {
      throw new AssemblyLineError("AL_ERR_DEFAULT_TOOL_UNKNOWN", `cannot activate "${name}" for run ${scope.runId}: it is not a tool the model may be offered`, {
        fix: "Activate only tools of the agent's table that are not hidden.",
      });
    }
    if (entry.mode === "disabled" || !entry.available) continue;
    fresh.push(name);
  }
  if (fresh.length > 0) {
    // Reserved before the first await, so a call beside this one cannot pass the check above meanwhile; freed
    // once recorded (or refused: a later activation tries again).
    const recording = (async () => {
      await scope.journal.record(scope.runId, TOOLS_ACTIVATED, { names: fresh as JsonValue, source });
      for (const name of fresh) {
        scope.visible.add(name);
        // The live list the engine was given: engines read it before each model call.
        scope.offered.push(toModelToolSpec(scope.table.get(name)!));
      }
    })();
    for (const name of fresh) underWay.set(name, recording);
    try {
      await recording;
    } finally {
      for (const name of fresh) underWay.delete(name);
    }
  }
  if (others.size === 0) return fresh;
  // Returns once the tools activated beside it are offered too, as they would be had this call activated them.
  // A record beside it that failed offered nothing: that failure is the other call's, and this one records
  // those names itself (its own failure, if any, is then its own).
  await Promise.allSettled(others.values());
  const left = [...others.keys()].filter((name) => !scope.visible.has(name));
  return left.length === 0 ? fresh : [...fresh, ...(await activateTools(scope, left, source))];
}

/** Names activated earlier in the run, in order, from its journal. */
export function activatedToolNames(events: RunEvent[]): string[] {
  const names: string[] = [];
  for (const event of events) {
    if (event.type !== TOOLS_ACTIVATED || !Array.isArray(event.data.names)) continue;
    for (const name of event.data.names) if (typeof name === "string" && !names.includes(name)) names.push(name);
  }
  return names;
}
