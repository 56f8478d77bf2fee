import {
  AssemblyLineError,
  checkListLimit,
  checkNewEvents,
  checkObservedSeq,
  checkPlainJsonObject,
  checkSeqNumber,
  staleFenceError,
  type CheckpointRecord,
  type JsonValue,
  type NewRunEvent,
  type AppendOptions,
  type RunEvent,
  type RunFence,
  type RunStateChange,
  type StepRecord,
  type ToolCallRecord,
} from "@assemblyline-agents/core";
import { jsonParam, type StateDatabase } from "../database.js";
import { SQLSTATE_OBSERVED_PAST_LOG, SQLSTATE_RUN_NOT_FOUND, SQLSTATE_SEQ_MISMATCH, SQLSTATE_STALE_FENCE, inputInvalid, pgDetail, sqlState } from "../errors.js";
import { RUN_STATUSES, TOOL_CALL_COLUMNS, TOOL_CALL_STATUSES, decodeCheckpoint, decodeEvent, decodeStep, decodeToolCall } from "../rows.js";
import { ArgumentCheck, fenceTokenParam } from "../validate.js";
import { runNotFound } from "./runs.js";

const RUN_FIELDS = ["status", "modelSpec", "output", "error", "conversationId"] as const;

/** The 36 arguments of the `append_events` SQL function, in its parameter order. */
function appendArguments(runId: string, events: NewRunEvent[], change: RunStateChange | undefined, options: AppendOptions) {
  const { expectedLastSeq, fence, observedSeq } = options;
  const check = new ArgumentCheck(`appendEvents(run "${runId}")`);
  // The checks every store makes: a type, and data a reader of the log gets back as the object written.
  checkNewEvents(check.operation, events);
  const types = events.map((event) => event.type);
  const data = events.map((event, i) => jsonParam(event.data ?? {}, check.operation, `events[${i}].data`) ?? "{}");
  if (expectedLastSeq !== undefined) checkSeqNumber(check.operation, "options.expectedLastSeq", expectedLastSeq);
  if (fence !== undefined) {
    check.object("options.fence", fence);
    check.string("options.fence.owner", fence.owner);
    check.nonNegative("options.fence.token", fence.token);
  }
  if (observedSeq !== undefined) checkSeqNumber(check.operation, "options.observedSeq", observedSeq);

  const c = change === undefined || change === null ? {} : (check.object("change", change) as RunStateChange);
  const run = c.run === undefined || c.run === null ? {} : check.object("change.run", c.run);
  const runFields = RUN_FIELDS.filter((field) => run[field] !== undefined);
  if (run.status !== undefined) check.oneOf("change.run.status", run.status, RUN_STATUSES);
  if (run.modelSpec !== undefined) check.text("change.run.modelSpec", run.modelSpec);
  if (run.conversationId !== undefined) check.nullableString("change.run.conversationId", run.conversationId);
  if (run.error !== undefined && run.error !== null) {
    check.text("change.run.error.message", check.object("change.run.error", run.error).message);
  }

  const tool = c.toolCall === undefined || c.toolCall === null ? undefined : (check.object("change.toolCall", c.toolCall) as Partial<ToolCallRecord>);
  const step = c.step === undefined || c.step === null ? undefined : (check.object("change.step", c.step) as Partial<StepRecord>);
  const checkpoint =
    c.checkpoint === undefined || c.checkpoint === null ? c.checkpoint : (check.object("change.checkpoint", c.checkpoint) as Partial<CheckpointRecord>);
  const delivery = c.delivery === undefined || c.delivery === null ? undefined : check.object("change.delivery", c.delivery);
  const now = () => new Date().toISOString();
  const op = check.operation;

  return [
    runId,
    expectedLastSeq ?? null,
    types,
    data,
    runFields,
    run.status ?? null,
    run.modelSpec ?? null,
    jsonParam(run.output, op, "change.run.output"),
    jsonParam(run.error, op, "change.run.error"),
    run.conversationId ?? null,
    tool ? check.string("change.toolCall.callId", tool.callId) : null,
    tool ? check.string("change.toolCall.toolName", tool.toolName) : null,
    tool ? jsonParam(tool.input, op, "change.toolCall.input") : null,
    tool ? check.text("change.toolCall.inputDigest", tool.inputDigest) : null,
    tool ? check.oneOf("change.toolCall.status", tool.status, TOOL_CALL_STATUSES) : null,
    tool ? jsonParam(tool.output, op, "change.toolCall.output") : null,
    tool ? jsonParam(tool.modelOutput, op, "change.toolCall.modelOutput") : null,
    tool ? check.nullableString("change.toolCall.error", tool.error) : null,
    tool ? check.nullableString("change.toolCall.approvalId", tool.approvalId) : null,
    tool ? jsonParam(tool.question, op, "change.toolCall.question") : null,
    tool ? (tool.createdAt === undefined ? now() : check.text("change.toolCall.createdAt", tool.createdAt)) : null,
    tool ? (tool.updatedAt === undefined ? now() : check.text("change.toolCall.updatedAt", tool.updatedAt)) : null,
    step ? check.string("change.step.key", step.key) : null,
    step ? jsonParam(step.result, op, "change.step.result") : null,
    step ? jsonParam(stepMetadata(op, step.metadata), op, "change.step.metadata") : null,
    step ? (step.createdAt === undefined ? now() : check.text("change.step.createdAt", step.createdAt)) : null,
    checkpoint === undefined ? null : checkpoint === null ? "clear" : "set",
    checkpoint ? jsonParam(checkpoint.continuation, op, "change.checkpoint.continuation") : null,
    checkpoint ? (checkpoint.createdAt === undefined ? now() : check.text("change.checkpoint.createdAt", checkpoint.createdAt)) : null,
    delivery ? check.string("change.delivery.id", delivery.id) : null,
    delivery ? check.string("change.delivery.channel", delivery.channel) : null,
    delivery ? check.nullableString("change.delivery.conversationId", delivery.conversationId) : null,
    delivery ? jsonParam(delivery.payload, op, "change.delivery.payload") : null,
    fence ? fence.owner : null,
    fence ? fenceTokenParam(fence.token) : null,
    observedSeq ?? null,
  ];
}

/** A step's metadata, `{}` when left out; refused unless a reader of the step gets back the object written. */
function stepMetadata(operation: string, metadata: unknown): Record<string, unknown> {
  if (metadata === undefined) return {};
  checkPlainJsonObject(operation, "change.step.metadata", metadata);
  return metadata;
}

const APPEND_PLACEHOLDERS = Array.from({ length: 36 }, (_, i) => `$${i + 1}`).join(", ");

/**
 * One round trip: the `append_events` function locks the run row, checks
 * `expectedLastSeq`, inserts the events after `last_seq`, applies the change and
 * moves `last_seq`, all in the statement's own transaction.
 */
export async function appendEvents(
  db: StateDatabase,
  runId: string,
  events: NewRunEvent[],
  change?: RunStateChange,
  options: AppendOptions = {},
): Promise<RunEvent[]> {
  const expectedLastSeq = options?.expectedLastSeq;
  const args = appendArguments(runId, events, change, options ?? {});
  const operation = `appendEvents(run "${runId}")`;
  const [row] = await db.rows<{ first_seq: number; recorded_at: Date }>(
    operation,
    `SELECT first_seq, recorded_at FROM ${db.s}.append_events(${APPEND_PLACEHOLDERS})`,
    args,
    (error) => {
      const code = sqlState(error);
      if (code === SQLSTATE_RUN_NOT_FOUND) return runNotFound(db, runId, operation);
      if (code === SQLSTATE_STALE_FENCE) {
        const current = pgDetail(error);
        return staleFenceError(runId, options.fence!, current ? { owner: "", token: Number(current) } : null);
      }
      if (code === SQLSTATE_OBSERVED_PAST_LOG) {
        return inputInvalid(operation, `options.observedSeq must be at most the run's lastSeq (${String(pgDetail(error))}), got ${String(options.observedSeq)}`, {
          field: "options.observedSeq",
        });
      }
      if (code === SQLSTATE_SEQ_MISMATCH) {
        const lastSeq = Number(pgDetail(error));
        return new AssemblyLineError(
          "AL_ERR_EVENT_SEQ",
          `run ${runId} is at seq ${lastSeq}, but the append expected seq ${String(expectedLastSeq)}`,
          {
            fix: "Another writer appended to this run; reload it and decide again, or hold the run's lease while writing.",
            details: { runId, lastSeq, expectedLastSeq },
          },
        );
      }
      return undefined;
    },
  );
  if (!row) throw runNotFound(db, runId, operation);
  const createdAt = row.recorded_at.toISOString();
  const types = args[2] as string[];
  const data = args[3] as string[];
  return types.map((type, i) => {
    const seq = row.first_seq + i;
    return { id: `${runId}:${seq}`, runId, seq, type, data: JSON.parse(data[i] as string) as Record<string, JsonValue>, createdAt };
  });
}

export async function listEvents(
  db: StateDatabase,
  runId: string,
  options: { afterSeq?: number; limit?: number } = {},
): Promise<RunEvent[]> {
  const operation = `listEvents(run "${runId}")`;
  if (options.limit !== undefined) checkListLimit(options.limit, operation);
  if (options.afterSeq !== undefined) checkSeqNumber(operation, "options.afterSeq", options.afterSeq);
  const afterSeq = options.afterSeq ?? 0;
  const rows = await db.rows(
    operation,
    // $2 as bigint: a position past the integer seq column's range holds nothing after it, rather than failing the cast.
    `SELECT run_id, seq, type, data, created_at FROM ${db.s}.run_events WHERE run_id = $1 AND seq > $2::bigint ORDER BY seq LIMIT $3`,
    [runId, afterSeq, options.limit ?? null],
  );
  return rows.map((row) => decodeEvent(db.schema, row));
}

/** Moves `observed_seq` forward; a position past the run's log is refused (the row is left as it was). */
export async function markObserved(db: StateDatabase, runId: string, seq: number): Promise<void> {
  const operation = `markObserved(run "${runId}")`;
  checkSeqNumber(operation, "seq", seq);
  const [row] = await db.rows<{ last_seq: number }>(
    operation,
    // $2 as bigint: a position past the integer column's range is past the log, refused below, not a failed cast.
    `UPDATE ${db.s}.runs SET observed_seq = CASE WHEN $2::bigint <= last_seq THEN greatest(observed_seq, $2::bigint) ELSE observed_seq END
     WHERE id = $1 RETURNING last_seq`,
    [runId, seq],
  );
  if (!row) throw runNotFound(db, runId, operation);
  checkObservedSeq(operation, "seq", seq, row.last_seq);
}

export async function getToolCall(db: StateDatabase, runId: string, callId: string): Promise<ToolCallRecord | undefined> {
  const [row] = await db.rows(
    `getToolCall(run "${runId}", call "${callId}")`,
    `SELECT ${TOOL_CALL_COLUMNS} FROM ${db.s}.tool_calls WHERE run_id = $1 AND call_id = $2`,
    [runId, callId],
  );
  return row ? decodeToolCall(db.schema, row) : undefined;
}

export async function listToolCalls(db: StateDatabase, runId: string): Promise<ToolCallRecord[]> {
  const rows = await db.rows(
    `listToolCalls(run "${runId}")`,
    `SELECT ${TOOL_CALL_COLUMNS} FROM ${db.s}.tool_calls WHERE run_id = $1 ORDER BY position`,
    [runId],
  );
  return rows.map((row) => decodeToolCall(db.schema, row));
}

export async function getStep(db: StateDatabase, runId: string, key: string): Promise<StepRecord | undefined> {
  const [row] = await db.rows(
    `getStep(run "${runId}", key "${key}")`,
    `SELECT run_id, key, result, metadata, created_at FROM ${db.s}.steps WHERE run_id = $1 AND key = $2`,
    [runId, key],
  );
  return row ? decodeStep(db.schema, row) : undefined;
}

export async function getCheckpoint(db: StateDatabase, runId: string): Promise<CheckpointRecord | undefined> {
  const [row] = await db.rows(
    `getCheckpoint(run "${runId}")`,
    `SELECT run_id, continuation, created_at FROM ${db.s}.checkpoints WHERE run_id = $1`,
    [runId],
  );
  return row ? decodeCheckpoint(db.schema, row) : undefined;
}
