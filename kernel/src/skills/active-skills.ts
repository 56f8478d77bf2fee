import type { RunEvent } from "@assemblyline-agents/core";
import type { SkillLibrary } from "./skill-library.js";
import { boundedProcedure } from "./skill-procedure-cap.js";

/** A skill the run loaded, as its context shows it when the run resumes. */
export interface ActiveSkill {
  name: string;
  body: string;
}

/**
 * The skills a run loaded (`skill.loaded`), each with the procedure it loaded: a
 * run that resumes follows what it started with, not whatever the store holds
 * now. The body comes back from the journaled load_skill result; when the skill
 * changed or was deleted since, the body says so first, so the model can load it
 * again for the current version. Loaded twice, a skill keeps its latest load.
 */
export async function activeSkillsOf(events: RunEvent[], library: SkillLibrary): Promise<ActiveSkill[]> {
  const loads = new Map<string, { digest: string; body: string | undefined }>();
  for (const [index, event] of events.entries()) {
    if (event.type !== "skill.loaded") continue;
    const name = String(event.data.name);
    // Re-inserted so that the order is that of the latest loads.
    loads.delete(name);
    loads.set(name, { digest: String(event.data.digest), body: loadedBody(events, index, name) });
  }
  const active: ActiveSkill[] = [];
  for (const [name, loaded] of loads) {
    const current = await library.get(name);
    if (current?.digest === loaded.digest) {
      active.push({ name, body: boundedProcedure(name, current.body) });
      continue;
    }
    const since = current ? "changed" : "been deleted";
    if (loaded.body !== undefined) {
      const again = current ? ` Load it again with load_skill to follow the current version.` : "";
      active.push({ name, body: `(This skill has ${since} since this run loaded it; below is the procedure the run loaded.${again})\n\n${loaded.body}` });
    } else if (current) {
      active.push({ name, body: `(This skill has changed since this run loaded it, and the loaded procedure was not recorded; below is the current version.)\n\n${boundedProcedure(name, current.body)}` });
    } else {
      active.push({ name, body: "(This skill has been deleted since this run loaded it, and the loaded procedure was not recorded: do not go on following it.)" });
    }
  }
  return active;
}

/** The procedure the load at `index` returned: the load_skill result recorded after it, if it completed. */
function loadedBody(events: RunEvent[], index: number, name: string): string | undefined {
  for (const event of events.slice(index + 1)) {
    if (event.type !== "tool.completed" || event.data.toolName !== "load_skill") continue;
    const output = event.data.output as { name?: unknown; instructions?: unknown } | null;
    if (output?.name === name && typeof output.instructions === "string") return output.instructions;
  }
  return undefined;
}
