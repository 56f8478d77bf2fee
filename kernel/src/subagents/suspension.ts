/**
 * Thrown out of a spawning tool call when the child run paused for an approval
 * or an answer: the parent pauses with the same reason, its tool call stays
 * open, and it resumes when the child finishes. Recognised by brand.
 */
export class SubagentSuspension extends Error {
  readonly $$type = "assembly-line.subagent-suspension";
  constructor(
    readonly childRunId: string,
    readonly reason: "approval" | "input",
  ) {
    super(`run suspended until subagent run ${childRunId} gets its ${reason}`);
    this.name = "SubagentSuspension";
  }
}

export function isSubagentSuspension(error: unknown): error is SubagentSuspension {
  return typeof error === "object" && error !== null && (error as { $$type?: unknown }).$$type === "assembly-line.subagent-suspension";
}
