import type { JsonValue } from "@assemblyline-agents/core";

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

export function changeGate(approved: boolean, required: boolean, remember: (suspension: ChangeApprovalSuspension) => void): ChangeGate {
  return {
    approved,
    require(reason, change) {
      if (!required || approved) return;
      const suspension = new ChangeApprovalSuspension(reason, change);
      // Remembered so a tool that catches the throw still pauses the run.
      remember(suspension);
      throw suspension;
    },
  };
}
