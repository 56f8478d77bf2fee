import type { AutomationManager, JsonValue } from "@assemblyline-agents/core";
import type { ChangeGate } from "../run/change-approval.js";
import type { Automations } from "./automations.js";

/**
 * `ctx.automationManager` for one tool call. With `approval` on, each change
 * (create, update, delete) pauses the run for approval before it is applied;
 * once approved, the tool call runs again and the change goes through. Listing
 * never needs approval.
 */
export function createAutomationManager(automations: Automations, gate: ChangeGate): AutomationManager {
  const ask = (action: string, name: string, change: Record<string, unknown>) =>
    gate.require(`The agent asks to ${action} the automation "${name}".`, { action, name, ...change } as JsonValue);
  return {
    list: () => automations.list(),
    async create(input) {
      // A malformed request, or a name already taken, fails at once instead of after a person approved it.
      await automations.check(input);
      ask("create", String(input?.name), { automation: input as unknown as JsonValue });
      return automations.create(input);
    },
    async update(name, patch) {
      await automations.checkUpdate(name, patch);
      ask("update", name, { patch: patch as unknown as JsonValue });
      return automations.update(name, patch);
    },
    async delete(name) {
      await automations.checkUpdate(name, {});
      ask("delete", name, {});
      return automations.delete(name);
    },
  };
}
