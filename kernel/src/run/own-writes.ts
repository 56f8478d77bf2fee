import { copyStateValue, type CheckpointRecord, type RunRecord, type RunStateChange, type StepRecord, type ToolCallRecord } from "@assemblyline-agents/core";

/**
 * The steps, tool calls and checkpoint a drive of a fresh run has written. A run
 * that was still queued when this process took its lease has none of them, and
 * under the lease only this drive writes them, so these answer the drive's
 * replay checks ("did this step or call complete before?") without reading back
 * from the store what this process just committed. Only committed changes are
 * recorded (after their append returned), with the store's own rules: a step key
 * is written once, a tool call is replaced, a checkpoint is set or cleared, the
 * run's own fields are patched.
 */
export class OwnWrites {
  private readonly steps = new Map<string, StepRecord>();
  private readonly toolCalls = new Map<string, ToolCallRecord>();
  private checkpoint: CheckpointRecord | undefined;
  private readonly record: RunRecord;

  constructor(run: RunRecord) {
    this.record = copyStateValue(run);
  }

  private get runId(): string {
    return this.record.id;
  }

  /** Record a change its append has committed. */
  committed(change: RunStateChange): void {
    if (change.run) Object.assign(this.record, copyStateValue(change.run));
    if (change.step && !this.steps.has(change.step.key)) this.steps.set(change.step.key, copyStateValue({ ...change.step, runId: this.runId }));
    if (change.toolCall) this.toolCalls.set(change.toolCall.callId, copyStateValue({ ...change.toolCall, runId: this.runId }));
    if (change.checkpoint !== undefined) this.checkpoint = change.checkpoint === null ? undefined : copyStateValue({ ...change.checkpoint, runId: this.runId });
  }

  step(key: string): StepRecord | undefined {
    const step = this.steps.get(key);
    return step && copyStateValue(step);
  }

  toolCall(callId: string): ToolCallRecord | undefined {
    const call = this.toolCalls.get(callId);
    return call && copyStateValue(call);
  }

  /** The run's record with every committed change applied (its status, model, output and error). */
  run(): RunRecord {
    return copyStateValue(this.record);
  }

  latestCheckpoint(): CheckpointRecord | undefined {
    return this.checkpoint && copyStateValue(this.checkpoint);
  }
}
