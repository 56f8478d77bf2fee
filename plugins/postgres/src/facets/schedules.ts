import {
  checkScheduleClaimed,
  checkScheduleDeleteIf,
  checkScheduleInput,
  checkScheduleReplace,
  checkedDate,
  checkedIsoTime,
  compareCodePoints,
  isSameSchedule,
  type ScheduleClaimOptions,
  type ScheduleRecord,
} from "@assemblyline-agents/core";
import { clockParam, jsonParam, type StateDatabase } from "../database.js";
import { decodeSchedule } from "../rows.js";
import { claimParams } from "../validate.js";

const SCHEDULE_COLUMNS = "id, agent_id, interval_ms, next_run_at, payload, enabled, lease_owner, lease_expires_at";

/** Insert or replace a schedule; a lease held on it survives the update. */
export async function upsertSchedule(db: StateDatabase, schedule: Omit<ScheduleRecord, "lease">): Promise<void> {
  const values = scheduleValues("upsertSchedule", schedule, checkScheduleInput("upsertSchedule", schedule));
  await db.run(
    `upsertSchedule(schedule "${schedule.id}")`,
    `INSERT INTO ${db.s}.schedules (id, interval_ms, next_run_at, payload, enabled, agent_id)
     VALUES ($1, $2, $3, $4::json, $5, $6)
     ON CONFLICT (id) DO UPDATE SET
       interval_ms = EXCLUDED.interval_ms, next_run_at = EXCLUDED.next_run_at,
       payload = EXCLUDED.payload, enabled = EXCLUDED.enabled, agent_id = EXCLUDED.agent_id`,
    values,
  );
}

/** Insert a schedule unless one has its id; true when inserted. */
export async function insertSchedule(db: StateDatabase, schedule: Omit<ScheduleRecord, "lease">): Promise<boolean> {
  const values = scheduleValues("insertSchedule", schedule, checkScheduleInput("insertSchedule", schedule));
  const inserted = await db.rows(
    `insertSchedule(schedule "${schedule.id}")`,
    `INSERT INTO ${db.s}.schedules (id, interval_ms, next_run_at, payload, enabled, agent_id)
     VALUES ($1, $2, $3, $4::json, $5, $6)
     ON CONFLICT (id) DO NOTHING RETURNING id`,
    values,
  );
  return inserted.length === 1;
}

/**
 * Replace a schedule only if its row still equals `expected` (the lease aside; the payload as JSON,
 * object keys in any order, as isSameSchedule compares it); true when replaced. One UPDATE: of two
 * concurrent replaces from one row, the second waits for the first's row lock, then finds the row
 * changed and matches nothing. The lease columns are not written, so a held lease stays.
 */
export async function replaceSchedule(db: StateDatabase, expected: Omit<ScheduleRecord, "lease">, next: Omit<ScheduleRecord, "lease">): Promise<boolean> {
  const nextRunAt = checkScheduleReplace(expected, next);
  const operation = `replaceSchedule(schedule "${expected.id}")`;
  const values = scheduleValues(operation, next, nextRunAt, "next");
  const was = scheduleValues(operation, expected, checkedIsoTime(operation, "expected.nextRunAt", expected.nextRunAt), "expected");
  return writeIfSame(db, operation, expected, was[3] as string | null, async (payloadText) => {
    const replaced = await db.rows(
      operation,
      `UPDATE ${db.s}.schedules SET interval_ms = $2, next_run_at = $3, payload = $4::json, enabled = $5, agent_id = $6
       WHERE id = $1 AND interval_ms = $7 AND next_run_at = $8::timestamptz
         AND payload::text IS NOT DISTINCT FROM $9::text AND enabled = $10 AND agent_id IS NOT DISTINCT FROM $11
       RETURNING id`,
      [...values, was[1], was[2], payloadText, was[4], was[5]],
    );
    return replaced.length === 1;
  });
}

/**
 * Delete a schedule only if its row still equals `expected`, compared as `replaceSchedule`
 * compares it; true when deleted. One DELETE: a concurrent replace or delete of the row holds
 * its row lock until it commits, and this one then finds the row changed (or gone) and matches nothing.
 */
export async function deleteScheduleIf(db: StateDatabase, expected: Omit<ScheduleRecord, "lease">): Promise<boolean> {
  checkScheduleDeleteIf(expected);
  const operation = `deleteScheduleIf(schedule "${expected.id}")`;
  const was = scheduleValues(operation, expected, checkedIsoTime(operation, "expected.nextRunAt", expected.nextRunAt), "expected");
  return writeIfSame(db, operation, expected, was[3] as string | null, async (payloadText) => {
    const deleted = await db.rows(
      operation,
      `DELETE FROM ${db.s}.schedules
       WHERE id = $1 AND interval_ms = $2 AND next_run_at = $3::timestamptz
         AND payload::text IS NOT DISTINCT FROM $4::text AND enabled = $5 AND agent_id IS NOT DISTINCT FROM $6
       RETURNING id`,
      [was[0], was[1], was[2], payloadText, was[4], was[5]],
    );
    return deleted.length === 1;
  });
}

/**
 * Run `write`, a compare-and-set of a schedule row whose payload must hold `payloadText` exactly,
 * so that it matches a row equal to `expected`. The payload is never compared as jsonb, which
 * refuses `\u0000` and lone surrogates that `json` keeps. The first try sends `expected.payload`
 * as JSON.stringify writes it: the row's own text whenever `expected` was read from the row, so
 * one statement as a rule. When that matches nothing, the row is read and compared as every store
 * compares it (isSameSchedule: object keys in any order), and if it is equal the write is tried
 * again on the exact text read: a change committed in between makes it match nothing, as it should.
 */
async function writeIfSame(
  db: StateDatabase,
  operation: string,
  expected: Omit<ScheduleRecord, "lease">,
  payloadText: string | null,
  write: (payloadText: string | null) => Promise<boolean>,
): Promise<boolean> {
  if (await write(payloadText)) return true;
  const [row] = await db.rows<Record<string, unknown> & { payload_text: string | null }>(
    operation,
    `SELECT ${SCHEDULE_COLUMNS}, payload::text AS payload_text FROM ${db.s}.schedules WHERE id = $1`,
    [expected.id],
  );
  if (!row || row.payload_text === payloadText || !isSameSchedule(decodeSchedule(db.schema, row), expected)) return false;
  return write(row.payload_text);
}

/**
 * The column values of a schedule checkScheduleInput passed: id, interval, next run (the ISO UTC
 * time the check gave), payload, enabled, agent.
 */
function scheduleValues(operation: string, schedule: Omit<ScheduleRecord, "lease">, nextRunAt: string, name = "schedule"): unknown[] {
  return [schedule.id, schedule.intervalMs, nextRunAt, jsonParam(schedule.payload, operation, `${name}.payload`), schedule.enabled, schedule.agentId ?? null];
}

export async function getSchedule(db: StateDatabase, id: string): Promise<ScheduleRecord | undefined> {
  const [row] = await db.rows(`getSchedule(schedule "${id}")`, `SELECT ${SCHEDULE_COLUMNS} FROM ${db.s}.schedules WHERE id = $1`, [id]);
  return row ? decodeSchedule(db.schema, row) : undefined;
}

export async function listSchedules(db: StateDatabase): Promise<ScheduleRecord[]> {
  const rows = await db.rows("listSchedules", `SELECT ${SCHEDULE_COLUMNS} FROM ${db.s}.schedules ORDER BY id COLLATE "C"`);
  return rows.map((row) => decodeSchedule(db.schema, row));
}

export async function claimDueSchedules(db: StateDatabase, options: ScheduleClaimOptions): Promise<ScheduleRecord[]> {
  const claim = claimParams("claimDueSchedules", options);
  if (claim.limit === 0) return [];
  const { text, values } = scheduleClaimStatement(db.s, claim);
  const rows = await db.rows("claimDueSchedules", text, values);
  return rows
    .map((row) => decodeSchedule(db.schema, row))
    // The statement's order (next_run_at, id COLLATE "C"): ids in code-point order, as listSchedules and every store give them.
    .sort((a, b) => Date.parse(a.nextRunAt) - Date.parse(b.nextRunAt) || compareCodePoints(a.id, b.id));
}

/** The schedule claim's one statement on schema `s` (quoted), and its values. */
export function scheduleClaimStatement(s: string, { owner, ttlMs, now, limit, agentId }: ReturnType<typeof claimParams>): { text: string; values: unknown[] } {
  const values: unknown[] = [owner, ttlMs, clockParam(now), limit];
  const ofAgent = agentId === undefined ? "" : `AND (sc.agent_id IS NULL OR sc.agent_id = $${values.push(agentId)})`;
  const text = `WITH clock AS (SELECT coalesce($3::timestamptz, now()) AS now),
     candidates AS (
       SELECT sc.id FROM ${s}.schedules sc, clock
       WHERE sc.enabled AND sc.next_run_at <= clock.now
         AND (sc.lease_owner IS NULL OR sc.lease_expires_at IS NULL OR sc.lease_expires_at <= clock.now)
         ${ofAgent}
       ORDER BY sc.next_run_at, sc.id COLLATE "C"
       LIMIT $4
       FOR UPDATE OF sc SKIP LOCKED
     )
     UPDATE ${s}.schedules sc SET lease_owner = $1, lease_expires_at = clock.now + $2::double precision * interval '1 millisecond'
     FROM clock
     -- By primary key: a join with the candidates may scan the whole table in a generic plan.
     WHERE sc.id = ANY (ARRAY(SELECT id FROM candidates))
     RETURNING sc.id, sc.agent_id, sc.interval_ms, sc.next_run_at, sc.payload, sc.enabled, sc.lease_owner, sc.lease_expires_at`;
  return { text, values };
}

/**
 * Release the lease and move to the next time; ignored unless `owner` holds the lease. With
 * `claimedNextRunAt`, the time moves only if the row still holds the one claimed; with `claimed`,
 * only if the row still equals it (compared as `replaceSchedule` compares): an edit wins.
 */
export async function completeScheduleRun(
  db: StateDatabase,
  id: string,
  owner: string,
  nextRunAt: Date,
  claimedNextRunAt?: string,
  claimed?: Omit<ScheduleRecord, "lease">,
): Promise<void> {
  const operation = `completeScheduleRun(schedule "${id}")`;
  const next = checkedDate(operation, "nextRunAt", nextRunAt);
  const claimedTime = claimedNextRunAt === undefined ? null : checkedIsoTime(operation, "claimedNextRunAt", claimedNextRunAt);
  checkScheduleClaimed(operation, id, claimed);
  if (claimed === undefined) {
    await db.run(
      operation,
      `UPDATE ${db.s}.schedules SET lease_owner = NULL, lease_expires_at = NULL,
         next_run_at = CASE WHEN $4::timestamptz IS NULL OR next_run_at = $4::timestamptz THEN $3 ELSE next_run_at END
       WHERE id = $1 AND lease_owner = $2`,
      [id, owner, next, claimedTime],
    );
    return;
  }
  const was = scheduleValues(operation, claimed, checkedIsoTime(operation, "claimed.nextRunAt", claimed.nextRunAt), "claimed");
  const moved = await writeIfSame(db, operation, claimed, was[3] as string | null, async (payloadText) => {
    const completed = await db.rows(
      operation,
      `UPDATE ${db.s}.schedules SET lease_owner = NULL, lease_expires_at = NULL, next_run_at = $3
       WHERE id = $1 AND lease_owner = $2 AND ($4::timestamptz IS NULL OR next_run_at = $4::timestamptz)
         AND interval_ms = $5 AND next_run_at = $6::timestamptz
         AND payload::text IS NOT DISTINCT FROM $7::text AND enabled = $8 AND agent_id IS NOT DISTINCT FROM $9
       RETURNING id`,
      [id, owner, next, claimedTime, was[1], was[2], payloadText, was[4], was[5]],
    );
    return completed.length === 1;
  });
  // Changed since the claim (or not this owner's lease any more): the edit stays, only the lease goes.
  if (!moved) await db.run(operation, `UPDATE ${db.s}.schedules SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2`, [id, owner]);
}

export async function deleteSchedule(db: StateDatabase, id: string): Promise<void> {
  await db.run(`deleteSchedule(schedule "${id}")`, `DELETE FROM ${db.s}.schedules WHERE id = $1`, [id]);
}
