import { isAssemblyLineError, type AutomationInfo, type AutomationManager, type JsonValue } from "@assemblyline-agents/core";
import type { ChangeGate } from "../run/change-approval.js";
import type { SkillChangeJournal } from "../skills/durable-skill-change.js";
import type { Automations, PlannedAutomation } from "./automations.js";

/**
 * `ctx.automationManager` for one tool call. With `approval` on, each change
 * (create, update, delete) pauses the run for approval before it is applied;
 * once approved, the tool call runs again and the change goes through. Listing
 * never needs approval.
 *
 * With the call's `journal`, each change is two steps of the call: what it
 * will write (checked, approved, its due time computed), then the write. A
 * call that runs again after a crash that came after the write answers as the
 * first attempt did: the row it finds is its own (a creation's instance is
 * chosen in the first step), so a create is not refused as a name taken, a
 * delete not answered as not found, and an update not re-timed.
 */
export function createAutomationManager(automations: Automations, gate: ChangeGate, journal?: SkillChangeJournal): AutomationManager {
  const ask = (action: string, name: string, change: Record<string, unknown>) =>
    gate.require(`The agent asks to ${action} the automation "${name}".`, { action, name, ...change } as JsonValue);
  let changes = 0;
  /** `decide` then `apply`, as two steps of the call when it has a journal. */
  const change = async <D, R>(action: string, decide: () => Promise<D>, apply: (decided: D) => Promise<R>): Promise<R> => {
    if (!journal) return apply(await decide());
    const key = `${journal.prefix}:${action}:${changes++}`;
    const decided = (await journal.step(`${key}:before`, async () => (await decide()) as unknown as JsonValue)) as unknown as D;
    return (await journal.step(`${key}:change`, async () => (await apply(decided)) as unknown as JsonValue)) as unknown as R;
  };
  return {
    list: () => automations.list(),
    create: (input) =>
      change<PlannedAutomation, AutomationInfo>(
        "create",
        async () => {
          // A malformed request, or a name already taken, fails at once instead of after a person approved it.
          const plan = await automations.planCreate(input);
          ask("create", String(input?.name), { automation: input as unknown as JsonValue });
          return plan;
        },
        (plan) => automations.applyCreate(plan),
      ),
    update: (name, patch) =>
      change<PlannedAutomation, AutomationInfo>(
        "update",
        async () => {
          await automations.checkUpdate(name, patch);
          ask("update", name, { patch: patch as unknown as JsonValue });
          // Planned once approved: a schedule given is timed from now, not from when approval was asked.
          return automations.planUpdate(name, patch);
        },
        (plan) => automations.applyUpdate(plan),
      ),
    delete: (name) =>
      change<{ instance: string | null; missing?: true }, { deleted: boolean }>(
        "delete",
        async () => {
          try {
            await automations.checkUpdate(name, {});
          } catch (error) {
            // No automation of that name: nothing to approve or delete, answered as runtime.automations.delete answers.
            if (isAssemblyLineError(error, "AL_ERR_AUTOMATION_NOT_FOUND")) return { instance: null, missing: true };
            throw error;
          }
          ask("delete", name, {});
          return { instance: await automations.dynamicInstance(name) };
        },
        async ({ instance, missing }) => (missing ? { deleted: false } : instance === null ? automations.delete(name) : automations.deleteInstance(name, instance)),
      ),
  };
}
