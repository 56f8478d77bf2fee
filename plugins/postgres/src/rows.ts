import { RUN_STATUSES } from "@assemblyline-agents/core";
import type {
  SkillRecord,
  CheckpointRecord,
  ConversationMessage,
  DeliveryRecord,
  DeliveryStatus,
  FileRecord,
  JsonValue,
  MemoryRecord,
  RunError,
  RunEvent,
  RunInput,
  Lease,
  RunLease,
  RunRecord,
  SandboxSessionRecord,
  ScheduleRecord,
  SettingAuditEvent,
  StepRecord,
  ToolCallRecord,
  ToolCallStatus,
  UsageRecord,
} from "@assemblyline-agents/core";
import { rowInvalid } from "./errors.js";

/**
 * Rows come back as `pg` decodes them (timestamptz -> Date, int8 -> string, json ->
 * parsed). Every decoder checks what it reads, so a row edited by hand fails with
 * an error naming the row and column instead of leaking a malformed record.
 */

export { RUN_STATUSES };
export const TOOL_CALL_STATUSES: readonly ToolCallStatus[] = [
  "requested",
  "waiting_approval",
  "approved",
  "denied",
  "waiting_input",
  "completed",
  "failed",
];
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ["pending", "delivered", "failed"];

type Row = Record<string, unknown>;

export function isJsonObject(value: unknown): value is Record<string, JsonValue> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Typed column reads for one row; a failed read names the row, the column and the bad value. */
class RowReader {
  constructor(
    private readonly schema: string,
    private readonly row: Row,
    private readonly where: string,
    private readonly details: Record<string, unknown>,
  ) {}

  fail(column: string, expected: string): never {
    const value = this.row[column];
    const shown = value === undefined ? "nothing" : describe(value);
    throw rowInvalid(this.schema, this.where, `has ${shown} in column ${column}, which must be ${expected}`, {
      ...this.details,
      column,
    });
  }

  string(column: string): string {
    const value = this.row[column];
    return typeof value === "string" ? value : this.fail(column, "text");
  }

  nullableString(column: string): string | null {
    const value = this.row[column];
    return value === null ? null : typeof value === "string" ? value : this.fail(column, "text or NULL");
  }

  oneOf<T extends string>(column: string, allowed: readonly T[]): T {
    const value = this.row[column];
    return typeof value === "string" && (allowed as readonly string[]).includes(value)
      ? (value as T)
      : this.fail(column, `one of ${allowed.join(", ")}`);
  }

  number(column: string): number {
    const raw = this.row[column];
    // int8 arrives as a string; it is a safe integer for every count this store keeps.
    const value = typeof raw === "string" ? Number(raw) : raw;
    return typeof value === "number" && Number.isFinite(value) ? value : this.fail(column, "a finite number");
  }

  boolean(column: string): boolean {
    const value = this.row[column];
    return typeof value === "boolean" ? value : this.fail(column, "a boolean");
  }

  time(column: string): string {
    const value = this.row[column];
    return value instanceof Date && !Number.isNaN(value.getTime()) ? value.toISOString() : this.fail(column, "a finite timestamp");
  }

  nullableTime(column: string): string | null {
    return this.row[column] === null ? null : this.time(column);
  }

  /** A json column: NULL reads as JSON null. */
  json(column: string): JsonValue {
    const value = this.row[column];
    return value === undefined || value === null ? null : (value as JsonValue);
  }

  object(column: string): Record<string, JsonValue> {
    const value = this.row[column];
    return isJsonObject(value) ? value : this.fail(column, "a JSON object");
  }

  lease(ownerColumn: string, expiresColumn: string): Lease | null {
    const owner = this.nullableString(ownerColumn);
    if (owner === null) return null;
    return { owner, expiresAt: this.time(expiresColumn) };
  }

  runLease(ownerColumn: string, expiresColumn: string, tokenColumn: string): RunLease | null {
    const lease = this.lease(ownerColumn, expiresColumn);
    // Built key by key: a spread followed by a new key gives each lease a map of its own in V8.
    return lease === null ? null : { owner: lease.owner, expiresAt: lease.expiresAt, token: this.number(tokenColumn) };
  }
}

function describe(value: unknown): string {
  if (value === null) return "NULL";
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "an invalid timestamp" : value.toISOString();
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** The columns of a run record, as `runs` and `create_run` (since migration 5) return them. */
export const RUN_COLUMNS =
  "id, agent_id, agent_revision, conversation_id, status, model_spec, input, output, error, last_seq, observed_seq, lease_owner, lease_expires_at, created_at, updated_at, lease_token";

export function decodeRun(schema: string, row: Row): RunRecord {
  const id = typeof row.id === "string" ? row.id : String(row.id);
  const read = new RowReader(schema, row, `run "${id}"`, { runId: id, table: "runs" });
  const input = read.object("input");
  if (typeof input.message !== "string" || !isJsonObject(input.metadata)) {
    read.fail("input", 'a JSON object with a "message" string and a "metadata" object');
  }
  const error = read.json("error");
  if (error !== null && !(isJsonObject(error) && typeof error.message === "string")) {
    read.fail("error", 'NULL or a JSON object with a "message" string');
  }
  return {
    id,
    agentId: read.string("agent_id"),
    agentRevision: read.string("agent_revision"),
    conversationId: read.nullableString("conversation_id"),
    status: read.oneOf("status", RUN_STATUSES),
    modelSpec: read.string("model_spec"),
    input: input as unknown as RunInput,
    output: read.json("output"),
    error: error as unknown as RunError | null,
    lastSeq: read.number("last_seq"),
    observedSeq: read.number("observed_seq"),
    lease: read.runLease("lease_owner", "lease_expires_at", "lease_token"),
    createdAt: read.time("created_at"),
    updatedAt: read.time("updated_at"),
  };
}

export function decodeEvent(schema: string, row: Row): RunEvent {
  const runId = String(row.run_id);
  const seq = Number(row.seq);
  const read = new RowReader(schema, row, `event ${seq} of run "${runId}"`, { runId, seq, table: "run_events" });
  return {
    id: `${runId}:${seq}`,
    runId,
    seq,
    type: read.string("type"),
    data: read.object("data"),
    createdAt: read.time("created_at"),
  };
}

export const TOOL_CALL_COLUMNS =
  "run_id, call_id, tool_name, input, input_digest, status, output, model_output, error, approval_id, question, created_at, updated_at";

export function decodeToolCall(schema: string, row: Row): ToolCallRecord {
  const runId = String(row.run_id);
  const callId = String(row.call_id);
  const read = new RowReader(schema, row, `tool call "${callId}" of run "${runId}"`, { runId, callId, table: "tool_calls" });
  return {
    runId,
    callId,
    toolName: read.string("tool_name"),
    input: read.json("input"),
    inputDigest: read.string("input_digest"),
    status: read.oneOf("status", TOOL_CALL_STATUSES),
    output: read.json("output"),
    modelOutput: read.json("model_output"),
    error: read.nullableString("error"),
    approvalId: read.nullableString("approval_id"),
    question: read.json("question"),
    createdAt: read.string("created_at"),
    updatedAt: read.string("updated_at"),
  };
}

export function decodeStep(schema: string, row: Row): StepRecord {
  const runId = String(row.run_id);
  const key = String(row.key);
  const read = new RowReader(schema, row, `step "${key}" of run "${runId}"`, { runId, key, table: "steps" });
  return {
    runId,
    key,
    result: read.json("result"),
    metadata: read.object("metadata"),
    createdAt: read.string("created_at"),
  };
}

export function decodeCheckpoint(schema: string, row: Row): CheckpointRecord {
  const runId = String(row.run_id);
  const read = new RowReader(schema, row, `checkpoint of run "${runId}"`, { runId, table: "checkpoints" });
  return { runId, continuation: read.json("continuation"), createdAt: read.string("created_at") };
}

export const DELIVERY_COLUMNS =
  "id, run_id, channel, conversation_id, payload, status, attempts, available_at, last_error, lease_owner, lease_expires_at, created_at, updated_at";

export function decodeDelivery(schema: string, row: Row): DeliveryRecord {
  const id = String(row.id);
  const runId = String(row.run_id);
  const read = new RowReader(schema, row, `delivery "${id}" of run "${runId}"`, { runId, deliveryId: id, table: "deliveries" });
  return {
    id,
    runId,
    channel: read.string("channel"),
    conversationId: read.nullableString("conversation_id"),
    payload: read.json("payload"),
    status: read.oneOf("status", DELIVERY_STATUSES),
    attempts: read.number("attempts"),
    availableAt: read.time("available_at"),
    lastError: read.nullableString("last_error"),
    lease: read.lease("lease_owner", "lease_expires_at"),
    createdAt: read.time("created_at"),
    updatedAt: read.time("updated_at"),
  };
}

export function decodeMessage(schema: string, row: Row): ConversationMessage {
  const conversationId = String(row.conversation_id);
  const read = new RowReader(schema, row, `message ${String(row.position)} of conversation "${conversationId}"`, {
    conversationId,
    table: "conversation_messages",
  });
  return {
    role: read.oneOf("role", ["user", "assistant"] as const),
    content: read.string("content"),
    runId: read.nullableString("run_id"),
    createdAt: read.string("created_at"),
    agentId: read.nullableString("agent_id"),
  };
}

export function decodeSchedule(schema: string, row: Row): ScheduleRecord {
  const id = String(row.id);
  const read = new RowReader(schema, row, `schedule "${id}"`, { scheduleId: id, table: "schedules" });
  const agentId = read.nullableString("agent_id");
  return {
    id,
    // A schedule of no agent lists no field, as one written without it was given none.
    ...(agentId !== null ? { agentId } : {}),
    intervalMs: read.number("interval_ms"),
    nextRunAt: read.time("next_run_at"),
    payload: read.json("payload"),
    enabled: read.boolean("enabled"),
    lease: read.lease("lease_owner", "lease_expires_at"),
  };
}

export function decodeFile(schema: string, row: Row): FileRecord {
  const path = String(row.path);
  const read = new RowReader(schema, row, `file record "${path}"`, { path, table: "files" });
  return {
    path,
    blobKey: read.string("blob_key"),
    size: read.number("size"),
    contentType: read.string("content_type"),
    sha256: read.string("sha256"),
    runId: read.nullableString("run_id"),
    createdAt: read.string("created_at"),
  };
}

export function decodeUsage(schema: string, row: Row): UsageRecord {
  const id = String(row.id);
  const read = new RowReader(schema, row, `usage record "${id}"`, { usageId: id, table: "usage" });
  return {
    id,
    runId: read.string("run_id"),
    conversationId: read.nullableString("conversation_id"),
    provider: read.string("provider"),
    model: read.string("model"),
    inputTokens: read.number("input_tokens"),
    outputTokens: read.number("output_tokens"),
    cacheReadTokens: read.number("cache_read_tokens"),
    cacheWriteTokens: read.number("cache_write_tokens"),
    costUsd: read.number("cost_usd"),
    createdAt: read.string("created_at"),
    agentId: read.nullableString("agent_id"),
  };
}

export function decodeSandboxSession(schema: string, row: Row): SandboxSessionRecord {
  const key = String(row.key);
  const read = new RowReader(schema, row, `sandbox session "${key}"`, { key, table: "sandbox_sessions" });
  return {
    key,
    adapter: read.string("adapter"),
    sessionId: read.string("session_id"),
    data: read.json("data"),
    createdAt: read.string("created_at"),
    updatedAt: read.string("updated_at"),
  };
}

export function decodeMemory(schema: string, row: Row): MemoryRecord {
  const path = String(row.path);
  const read = new RowReader(schema, row, `memory "${path}"`, { path, table: "memory" });
  return { path, content: read.string("content"), updatedAt: read.time("updated_at") };
}

export function decodeSettingAudit(schema: string, row: Row): SettingAuditEvent {
  const id = String(row.id);
  const read = new RowReader(schema, row, `setting audit event "${id}"`, { auditId: id, table: "setting_audit" });
  return {
    id,
    key: read.string("key"),
    value: read.json("value"),
    previous: read.json("previous"),
    actor: read.string("actor"),
    reason: read.nullableString("reason"),
    createdAt: read.time("created_at"),
  };
}

export const SKILL_COLUMNS = "agent_id, name, files, digest, seed_digest, seed_revision, changed_by, conflict, updated_at";

export function decodeSkill(schema: string, row: Row): SkillRecord {
  const agentId = String(row.agent_id);
  const name = String(row.name);
  const read = new RowReader(schema, row, `skill "${name}" of agent "${agentId}"`, { agentId, name, table: "skills" });
  const files = read.object("files");
  for (const [path, text] of Object.entries(files)) if (typeof text !== "string") read.fail("files", `text for ${path}`);
  const conflict = read.json("conflict");
  return {
    agentId,
    name,
    files: files as Record<string, string>,
    digest: read.string("digest"),
    seedDigest: read.nullableString("seed_digest"),
    seedRevision: read.nullableString("seed_revision"),
    changedBy: read.oneOf("changed_by", ["seed", "agent", "user"] as const),
    conflict: conflict === null ? null : (read.object("conflict") as unknown as SkillRecord["conflict"]),
    updatedAt: read.string("updated_at"),
  };
}
