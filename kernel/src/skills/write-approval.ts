import type { JsonValue, RunStore } from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";
import type { SkillWriteGate, SkillWriteResult } from "./skill-library.js";

/**
 * Thrown by the write gate of `selfImprovement.writeApproval`: the tool call
 * pauses for an approval of exactly this change (skill, file, digest before and
 * after). Recognised by brand.
 */
export class SkillApprovalSuspension extends Error {
  readonly $$type = "assembly-line.skill-approval-suspension";
  constructor(readonly skillWrite: SkillWriteResult & { binding: string }) {
    super(`skill write to /skills/${skillWrite.name}/${skillWrite.path} waits for approval`);
    this.name = "SkillApprovalSuspension";
  }

  get reason(): string {
    const what = this.skillWrite.after === null ? "delete" : this.skillWrite.before === null ? "create" : "change";
    return `Self-improvement wants to ${what} /skills/${this.skillWrite.name}/${this.skillWrite.path} (selfImprovement.writeApproval).`;
  }

  get data(): Record<string, JsonValue> {
    return { ...this.skillWrite };
  }
}

export function isSkillApprovalSuspension(error: unknown): error is SkillApprovalSuspension {
  return typeof error === "object" && error !== null && (error as { $$type?: unknown }).$$type === "assembly-line.skill-approval-suspension";
}

/**
 * The gate one tool call's skill writes pass: a change goes through only when
 * the call was approved and the approval it last asked for names exactly this
 * change; otherwise the call pauses to ask (again).
 */
export function skillWriteGate(runs: RunStore, runId: string, call: { id: string; approved: boolean }): SkillWriteGate {
  return async (change) => {
    const binding = digestJson([change.name, change.path, change.before, change.after]);
    if (call.approved) {
      const asked = (await runs.listEvents(runId)).filter((event) => event.type === "approval.requested" && event.data.callId === call.id).at(-1);
      const approvedWrite = asked?.data.skillWrite as { binding?: string } | undefined;
      if (approvedWrite?.binding === binding) return;
    }
    throw new SkillApprovalSuspension({ ...change, binding });
  };
}
