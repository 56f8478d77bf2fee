import { AssemblyLineError, type RunRecord, type RunStatus } from "@assemblyline-agents/core";

/**
 * The refusal of an answer or decision given to a parent whose subagent already took one and
 * ended: the parent, which had not taken the child's end yet, was woken instead, and the answer or
 * decision given now is used nowhere. Refused, so its caller never reports it as taken.
 */
export function endedChildRefusal(
  runId: string,
  child: RunRecord,
  parentNow: RunStatus,
  given: { kind: "answer" | "decision"; callId?: string },
): AssemblyLineError {
  const subagent = child.input.parent?.subagent ?? child.agentId;
  const why =
    given.kind === "answer"
      ? `the question was already answered: subagent ${subagent} (run ${child.id}) took an answer and ended (${child.status})`
      : `subagent ${subagent} (run ${child.id}) had its call decided already and ended (${child.status})`;
  const message = `${given.callId !== undefined ? `run ${runId} has no pending ${given.kind === "answer" ? "question" : "approval"} ${given.callId}` : `run ${runId} waits for no ${given.kind}`}: ${why}; the run was resumed and is ${parentNow} now`;
  return new AssemblyLineError(given.callId !== undefined ? "AL_ERR_APPROVAL_NOT_FOUND" : "AL_ERR_RUN_NOT_RESUMABLE", message, {
    fix: `This ${given.kind} was not used. See where the run stands (\`assembly-line runs show ${runId}\`) and ${given.kind === "answer" ? "answer a question it asks then" : "decide what it waits on then"}.`,
    details: { runId, childRunId: child.id },
  });
}
