import type { ClaimOptions, DeliveryRecord, FailDeliveryOptions } from "@assemblyline-agents/core";
import { clockParam, type StateDatabase } from "../database.js";
import { DELIVERY_COLUMNS, decodeDelivery } from "../rows.js";
import { ArgumentCheck, claimParams } from "../validate.js";
import { parameters } from "./prefix-range.js";
import { prefixed, runOfAgent } from "./runs.js";

/*
 * The durable outbox. Deliveries are enqueued by appendEvents (with the event
 * that describes them); workers claim them with leases. completeDelivery and
 * failDelivery from an owner that no longer holds the lease are ignored, so a
 * worker whose lease was taken over cannot undo the new holder's work.
 */

export async function listDeliveries(db: StateDatabase, runId: string): Promise<DeliveryRecord[]> {
  const rows = await db.rows(
    `listDeliveries(run "${runId}")`,
    `SELECT ${DELIVERY_COLUMNS} FROM ${db.s}.deliveries WHERE run_id = $1 ORDER BY position`,
    [runId],
  );
  return rows.map((row) => decodeDelivery(db.schema, row));
}

export async function claimDeliveries(db: StateDatabase, options: ClaimOptions): Promise<DeliveryRecord[]> {
  const claim = claimParams("claimDeliveries", options);
  if (claim.limit === 0) return [];
  const { text, values } = claimStatement(db.s, claim);
  const rows = await db.rows("claimDeliveries", text, values);
  return rows
    .map((row) => ({ position: Number(row.position), record: decodeDelivery(db.schema, row) }))
    .sort((a, b) => Date.parse(a.record.availableAt) - Date.parse(b.record.availableAt) || a.position - b.position)
    .map(({ record }) => record);
}

/** The claim's one statement on schema `s` (quoted), and its values. */
export function claimStatement(
  s: string,
  { owner, ttlMs, now, limit, agentId }: ReturnType<typeof claimParams>,
): { text: string; values: unknown[] } {
  const values: unknown[] = [owner, ttlMs, clockParam(now), limit];
  // A delivery's agent is its run's, written with it (migration 9). deliveries_pending_by_agent
  // keys the rows by their root agent (the id before any "/"), so the agent's and its subagents'
  // come in claim order and another agent's are never read; the run test then picks exactly.
  const parameter = parameters(values);
  const ofAgent = agentId === undefined ? "" : `AND split_part(d.agent_id, '/', 1) = split_part(${parameter(agentId)}, '/', 1) AND ${runOfAgent("d.agent_id", agentId, parameter)}`;
  const text = `WITH clock AS (SELECT coalesce($3::timestamptz, now()) AS now),
     candidates AS (
       SELECT d.id FROM ${s}.deliveries d, clock
       WHERE d.status = 'pending'
         AND d.available_at <= clock.now
         AND (d.lease_owner IS NULL OR d.lease_expires_at IS NULL OR d.lease_expires_at <= clock.now)
         ${ofAgent}
       ORDER BY d.available_at, d.position
       LIMIT $4
       FOR UPDATE OF d SKIP LOCKED
     )
     UPDATE ${s}.deliveries d SET
       -- Counted when claimed, not when settled: a sender that dies mid-attempt still used it up.
       attempts = d.attempts + 1,
       lease_owner = $1,
       lease_expires_at = clock.now + $2::double precision * interval '1 millisecond',
       updated_at = clock.now
     FROM clock
     -- By primary key: a join with the candidates may scan the whole table in a generic plan.
     WHERE d.id = ANY (ARRAY(SELECT id FROM candidates))
     RETURNING d.position, ${prefixed("d", DELIVERY_COLUMNS)}`;
  return { text, values };
}

export async function completeDelivery(db: StateDatabase, deliveryId: string, owner: string): Promise<void> {
  await db.run(
    `completeDelivery(delivery "${deliveryId}")`,
    `UPDATE ${db.s}.deliveries SET
       status = 'delivered', last_error = NULL,
       lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
     WHERE id = $1 AND status = 'pending' AND lease_owner = $2`,
    [deliveryId, owner],
  );
}

export async function failDelivery(
  db: StateDatabase,
  deliveryId: string,
  owner: string,
  error: string,
  retryAt?: Date,
  options: FailDeliveryOptions = {},
): Promise<void> {
  const check = new ArgumentCheck(`failDelivery(delivery "${deliveryId}")`);
  check.text("error", error);
  check.optionalDate("retryAt", retryAt);
  // Only an explicit false gives it back: a value mistaken for one never under-counts.
  const attemptGivenBack = options.countAttempt === false;
  await db.run(
    check.operation,
    `UPDATE ${db.s}.deliveries SET
       -- In the release's own statement: given back only where this owner's lease matched.
       attempts = CASE WHEN $5::boolean THEN greatest(attempts - 1, 0) ELSE attempts END,
       last_error = $3,
       lease_owner = NULL, lease_expires_at = NULL, updated_at = now(),
       status = CASE WHEN $4::timestamptz IS NULL THEN 'failed' ELSE 'pending' END,
       available_at = coalesce($4::timestamptz, available_at)
     WHERE id = $1 AND status = 'pending' AND lease_owner = $2`,
    [deliveryId, owner, error, clockParam(retryAt), attemptGivenBack],
  );
}
