import { isAssemblyLineError, type JsonValue } from "@assemblyline-agents/core";
import type { SkillLibrary, SkillWriteResult } from "./skill-library.js";

/** Runs `fn` as a durable step of the current tool call (ctx.step): a completed key returns its recorded result. */
export type SkillStepRunner = <T extends JsonValue>(key: string, fn: () => Promise<T>) => Promise<T>;

/** Where one tool call's changes are journaled: its step runner and a prefix unique to the call. */
export interface SkillChangeJournal {
  step: SkillStepRunner;
  /** e.g. `skill-change:<toolCallId>`; each change of the call adds its number. */
  prefix: string;
}

/**
 * One tool call's skill-change journal, shared by its `ctx.selfImprovement` and its /skills
 * writes: each change takes the call's next number, whichever made it, so no two changes share
 * a step key. Numbers go in call order, which a replay repeats. A call that changes skills one
 * way only gets 0, 1, ... as it did when each way counted alone, so its older journals replay.
 */
export interface SkillChangeSteps extends SkillChangeJournal {
  /** The number of the call's next skill change. */
  next(): number;
}

export function skillChangeSteps(journal: SkillChangeJournal): SkillChangeSteps {
  let changes = 0;
  return { ...journal, next: () => changes++ };
}

/** What the skill held before a change, recorded before the change is made. */
interface RecordedBefore {
  [key: string]: JsonValue;
  digest: string | null;
  /** Whether the file the change names was there. */
  had: boolean;
}

/**
 * One skill change and its `skill.changed` event, exactly once across a crash.
 * The store and the run's events are two writes, so the change is journaled in
 * two steps of the tool call that makes it: the skill's digest before, then the
 * change, whose event (`recordChange`, held for the step: see holdForStep)
 * commits with the step's completion. When the tool call runs again after a
 * crash that came after the store write, the write finds its result already
 * stored (or, for a delete, nothing left to delete): the change is then
 * reported from the digest recorded before it, and its event recorded now.
 * Without a journal (no tool call, so no steps) the change is made, then
 * recorded if it changed anything.
 */
export async function durableSkillChange(
  journal: SkillChangeSteps | undefined,
  library: SkillLibrary,
  target: { name: string; path: string },
  apply: () => Promise<SkillWriteResult>,
  recordChange: (change: SkillWriteResult) => Promise<void>,
): Promise<SkillWriteResult> {
  if (!journal) {
    const made = await apply();
    if (made.before !== made.after) await recordChange(made);
    return made;
  }
  const key = `${journal.prefix}:${journal.next()}`;
  const before = await journal.step<RecordedBefore>(`${key}:before`, async () => {
    const skill = await library.get(target.name);
    return { digest: skill?.digest ?? null, had: skill?.files[target.path] !== undefined };
  });
  const change = await journal.step<JsonValue>(`${key}:change`, async () => {
    let made: SkillWriteResult;
    try {
      made = await apply();
    } catch (error) {
      // A delete that landed before the crash: the file was there before it and is gone now.
      const now = await library.get(target.name);
      if (!isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND") || !before.had || now?.files[target.path] !== undefined) throw error;
      made = { ...target, before: before.digest, after: target.path === "SKILL.md" ? null : (now?.digest ?? null) };
    }
    // A write that landed before the crash: the store already holds what it writes.
    if (made.before === made.after && before.digest !== made.after) made = { ...made, before: before.digest };
    if (made.before !== made.after) await recordChange(made);
    return { ...made };
  });
  return change as unknown as SkillWriteResult;
}
