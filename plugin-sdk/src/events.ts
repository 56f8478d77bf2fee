import type { JsonValue } from "./json.js";

/** One durably recorded run event. `seq` is contiguous per run, starting at 1. */
export interface RunEvent {
  /** Globally unique; `${runId}:${seq}`. */
  id: string;
  runId: string;
  seq: number;
  type: string;
  data: Record<string, JsonValue>;
  /** ISO-8601 time of recording. */
  createdAt: string;
}

/** An event about to be appended; the store assigns id, seq and time. */
export interface NewRunEvent {
  type: string;
  data?: Record<string, JsonValue>;
}

/** The event types the runtime itself records (custom `ctx.emit` types are free-form). */
export const RUN_EVENT_TYPES = [
  "run.created",
  "run.started",
  "run.capabilities_resolved",
  "run.resumed",
  "run.waiting_approval",
  "run.waiting_input",
  "run.completed",
  "run.failed",
  "model.response",
  "model.failed",
  "tool.called",
  "tool.input_invalid",
  "tool.completed",
  "tool.execution_failed",
  "tool.replayed",
  "tool.denied",
  "tool.disabled",
  "tools.activated",
  "approval.requested",
  "approval.granted",
  "approval.denied",
  "input.requested",
  "input.received",
  "durable_step.completed",
  "durable_step.replayed",
  "hook.failed",
  "budget.exceeded",
  "run.migrated",
] as const;

export type RunEventType = (typeof RUN_EVENT_TYPES)[number];
