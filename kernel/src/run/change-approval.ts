import { AssemblyLineError, type JsonValue, type RunEvent } from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";

/**
 * Thrown inside a tool call by a run-time API whose changes need approval
 * (ctx.automationManager, ctx.connectionManager) when the call has not been
 * approved yet; the pipeline turns it into a `waiting_approval` pause, and the
 * approved call runs again from the start. Recognised by brand, not `instanceof`.
 */
export class ChangeApprovalSuspension extends Error {
  readonly $$type = "assembly-line.change-approval";
  constructor(
    readonly reason: string,
    /** What would change, shown to the approver in `approval.requested`. */
    readonly change: JsonValue,
  ) {
    super(`run suspended for approval: ${reason}`);
    this.name = "ChangeApprovalSuspension";
  }
}

export function isChangeApprovalSuspension(error: unknown): error is ChangeApprovalSuspension {
  return typeof error === "object" && error !== null && (error as { $$type?: unknown }).$$type === "assembly-line.change-approval";
}

/** How a run-time API asks for approval of one change: returns when approved, otherwise pauses the run. */
export interface ChangeGate {
  /** true once this tool call passed an approval. */
  readonly approved: boolean;
  require(reason: string, change: JsonValue): void;
}

/**
 * The `approval.requested` of tool call `callId` that approval `approvalId` answers: what its gate showed
 * (`change` for a change, none for the tool's own gate). Each gate of a call has its own approval id.
 */
export function approvalRequestOf(events: RunEvent[], callId: string, approvalId: string): RunEvent | undefined {
  return events.findLast((event) => event.type === "approval.requested" && event.data.callId === callId && event.data.approvalId === approvalId);
}

/**
 * The gate of one tool call's changes. A change pauses the call for approval,
 * showing it, unless the call's last approval showed this very change: the
 * approved call runs again from the start, and that change goes through. An
 * approval of the tool itself showed no change, so its first change asks too.
 * Another change after an approved one is refused, never applied unseen: the
 * call would run again from the start, applying the approved one twice.
 */
export function changeGate(
  approved: boolean,
  required: boolean,
  approvedChange: JsonValue | undefined,
  remember: (suspension: ChangeApprovalSuspension) => void,
): ChangeGate {
  return {
    approved,
    require(reason, change) {
      if (!required) return;
      if (!approved || approvedChange === undefined) {
        const suspension = new ChangeApprovalSuspension(reason, change);
        // Remembered so a tool that catches the throw still pauses the run.
        remember(suspension);
        throw suspension;
      }
      if (digestJson(approvedChange) === digestJson(change)) return;
      throw new AssemblyLineError("AL_ERR_CHANGE_NOT_APPROVED", `${reason} This tool call's approval was for another change, so this one is not applied.`, {
        fix: "Make one change per tool call when changes need approval: call the tool again for the next one.",
        details: { change, approvedChange },
      });
    },
  };
}
