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
  "budget.extended",
  "run.migrated",
  "skill.loaded",
  "skill.changed",
  "skill.seeded",
  "skill.upgraded",
  "skill.seed_conflict",
  "skill.seed_removed",
  "subagent.started",
  "subagent.waiting",
  "subagent.completed",
  "subagent.resumed_parent",
  "attachment.stored",
  "attachment.failed",
] as const;

export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

/**
 * The namespaces (the part of a type before its first `.`) of the events the runtime records. A
 * run reads some of its own events back (`budget.extended` raises a limit, `skill.loaded` puts a
 * skill in the context, `subagent.started` counts a spawn), so `ctx.emit` takes no type in them:
 * a tool's event could otherwise stand for the runtime's.
 */
export const RESERVED_EVENT_NAMESPACES = ["run", "model", "tool", "tools", "approval", "input", "durable_step", "hook", "budget", "skill", "subagent", "attachment"] as const;

/** Whether `type` is the runtime's to record: one of RUN_EVENT_TYPES or in a RESERVED_EVENT_NAMESPACES namespace. */
export function isReservedEventType(type: string): boolean {
  const namespace = type.split(".", 1)[0]!;
  return (RUN_EVENT_TYPES as readonly string[]).includes(type) || (RESERVED_EVENT_NAMESPACES as readonly string[]).includes(namespace);
}
