import { AssemblyLineError, DEFAULT_RUN_PAGE_SIZE, checkLeaseOwner, checkLeaseTtl, checkNewRun, checkObservedSeq, checkRunListFilter, checkSeqNumber, type ClaimOptions, type CreatedRun, type CreateRunOptions, type JsonValue, type NewRun, type ReleaseOptions, type RunEvent, type RunFence, type RunLease, type TakenRunLease, type ClaimedRunRecord, type Lease, type RunListFilter, type RunPage, type RunRecord } from "@assemblyline-agents/core";
import { clockParam, jsonParam, type StateDatabase } from "../database.js";
import { inputInvalid } from "../errors.js";
import { RUN_COLUMNS, decodeRun, isJsonObject } from "../rows.js";
import { ArgumentCheck, checkLeaseEnd, claimParams, fenceTokenParam } from "../validate.js";
import { parameters, underPrefix, type Parameter } from "./prefix-range.js";

/** The schema is in `details` only: the Node host answers this message to HTTP callers (a 404), who have no business knowing it. */
export function runNotFound(db: StateDatabase, runId: string, operation: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_RUN_NOT_FOUND", `${operation}: no run with id "${runId}" exists in the PostgreSQL state`, {
    fix: "Create the run with createRun before writing to it, and check the run id.",
    details: { runId, schema: db.schema },
  });
}

export async function createRun(db: StateDatabase, run: NewRun, options: CreateRunOptions, session: string | null): Promise<CreatedRun> {
  checkNewRun("createRun", run, options);
  if (options.lease) checkLeaseEnd("createRun", "options.lease.ttlMs", options.lease.ttlMs, undefined);
  const { id, agentId, agentRevision, modelSpec, input } = run;
  const conversationId = run.conversationId ?? null;
  const status = run.status ?? "queued";
  const idempotencyKey = run.idempotencyKey ?? null;
  const leaseOwner = options.lease?.owner ?? null;
  const leaseTtlMs = options.lease?.ttlMs ?? null;
  const operation = `createRun(run "${id}")`;
  const inputJson = jsonParam(input, "createRun", "run.input");
  const createdData = `{"agentId":${JSON.stringify(agentId)},"agentRevision":${JSON.stringify(agentRevision)},"conversationId":${JSON.stringify(conversationId)},"modelSpec":${JSON.stringify(modelSpec)},"status":${JSON.stringify(status)},"input":${inputJson}}`;

  // One round trip: the create_run SQL function (see the migrations).
  const [row] = await db.rows<Record<string, unknown>>(
    operation,
    `SELECT ${RUN_COLUMNS}, created FROM ${db.s}.create_run($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [id, agentId, agentRevision, conversationId, status, modelSpec, inputJson, idempotencyKey, createdData, leaseOwner, leaseTtlMs, leaseOwner === null ? null : session],
  );
  if (!row || row.id === null) {
    // Only when the conflicting run vanished between the insert and the read (deleted by hand).
    throw inputInvalid(operation, `run id "${id}" or its idempotency key conflicted with a run that no longer exists; retry the call`, {
      runId: id,
    });
  }
  const record = decodeRun(db.schema, row);
  if (row.created !== true) return { run: record, created: false };
  const createdEvent: RunEvent = { id: `${id}:1`, runId: id, seq: 1, type: "run.created", data: JSON.parse(createdData) as Record<string, JsonValue>, createdAt: record.createdAt };
  return { run: record, created: true, createdEvent };
}

export async function getRun(db: StateDatabase, runId: string): Promise<RunRecord | undefined> {
  const [row] = await db.rows(`getRun(run "${runId}")`, `SELECT ${RUN_COLUMNS} FROM ${db.s}.runs WHERE id = $1`, [runId]);
  return row ? decodeRun(db.schema, row) : undefined;
}

/** The statement of one page of `listRuns(filter)`: `limit` rows and one more, which says whether a next page exists. */
export function runListStatement(s: string, filter: RunListFilter, limit: number): { text: string; values: unknown[] } {
  const statuses = filter.status === undefined ? null : [...new Set([filter.status].flat())];
  const before = filter.cursor === undefined ? null : decodeRunCursor(filter.cursor);
  const observersBehind = filter.observersBehind === true ? "\n       AND observed_seq < last_seq" : "";
  if (filter.conversationId !== undefined && statuses !== null && statuses.length === 2 && statuses.every((status) => status === "queued" || status === "running")) {
    // A conversation's unfinished runs (what runtime.start asks before a turn): read from
    // runs_unfinished_by_conversation, whose predicate the statuses written out here match in any plan.
    return {
      text: `SELECT position, ${RUN_COLUMNS} FROM ${s}.runs
     WHERE conversation_id = $1
       AND status IN ('queued', 'running')
       AND ($2::bigint IS NULL OR position < $2)
       AND ($3::text IS NULL OR agent_id = $3)${observersBehind}
     ORDER BY position DESC
     LIMIT $4`,
      values: [filter.conversationId, before, filter.agentId ?? null, limit + 1],
    };
  }
  return {
    text: `SELECT position, ${RUN_COLUMNS} FROM ${s}.runs
     WHERE ($1::bigint IS NULL OR position < $1)
       AND ($2::text[] IS NULL OR status = ANY ($2))
       AND ($3::text IS NULL OR agent_id = $3)
       AND ($4::text IS NULL OR conversation_id = $4)${observersBehind}
     ORDER BY position DESC
     LIMIT $5`,
    values: [before, statuses, filter.agentId ?? null, filter.conversationId ?? null, limit + 1],
  };
}

export async function listRuns(db: StateDatabase, filter: RunListFilter = {}): Promise<RunPage> {
  const limit = checkRunListFilter(filter) ?? DEFAULT_RUN_PAGE_SIZE;
  const { text, values } = runListStatement(db.s, filter, limit);
  const rows = await db.rows("listRuns", text, values);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    runs: page.map((row) => decodeRun(db.schema, row)),
    nextCursor: rows.length > limit && last ? encodeRunCursor(String(last.position)) : null,
  };
}

/**
 * A lease whose holder's liveness session is gone (see LivenessSession): the
 * try-lock succeeds only when no session holds the key, i.e. the holder is dead,
 * or (the one exception) its dropped session has not yet been reopened on the key.
 * Without `detectDeadHolders` (behind a transaction-mode pooler, whose server
 * connections serve every client, a live holder's lock can look free) no lease is
 * taken before it expires.
 */
const HOLDER_GONE = (alias: string, detectDeadHolders: boolean) =>
  detectDeadHolders ? ` OR (${alias}lease_session IS NOT NULL AND pg_try_advisory_xact_lock(${alias}lease_session))` : "";

export async function acquireRunLease(
  db: StateDatabase,
  runId: string,
  owner: string,
  ttlMs: number,
  now: Date | undefined,
  session: string | null,
  detectDeadHolders = true,
): Promise<TakenRunLease | null> {
  const operation = `acquireRunLease(run "${runId}")`;
  checkLeaseOwner(operation, "owner", owner);
  checkLeaseTtl(operation, "ttlMs", ttlMs);
  new ArgumentCheck(operation).optionalDate("now", now);
  checkLeaseEnd(operation, "ttlMs", ttlMs, now);
  // Take the lease when it is free, expired, already ours, or its holder's session is
  // gone; never for a finished run. Every take bumps the fencing token. The row lock
  // the subquery takes makes concurrent acquirers queue and re-check, and hands the
  // UPDATE the row as it stood, so the lease it replaced can be returned.
  const [row] = await db.rows<{ found: boolean; token: string | null; expires_at: Date | null; replaced_owner: string | null; replaced_expires_at: Date | null }>(
    operation,
    `WITH clock AS (SELECT coalesce($4::timestamptz, now()) AS now),
     acquired AS (
       UPDATE ${db.s}.runs r SET lease_owner = $2, lease_expires_at = clock.now + $3::double precision * interval '1 millisecond',
         lease_token = r.lease_token + 1, lease_session = $5::bigint
       FROM clock, (
         SELECT p.id, p.lease_owner, p.lease_expires_at FROM ${db.s}.runs p, clock
         WHERE p.id = $1 AND p.status NOT IN ('completed', 'failed')
           AND (p.lease_owner IS NULL OR p.lease_owner = $2 OR p.lease_expires_at IS NULL OR p.lease_expires_at <= clock.now${HOLDER_GONE("p.", detectDeadHolders)})
         FOR UPDATE OF p
       ) previous
       WHERE r.id = previous.id
       RETURNING r.lease_token, r.lease_expires_at, previous.lease_owner AS replaced_owner, previous.lease_expires_at AS replaced_expires_at
     )
     SELECT EXISTS (SELECT 1 FROM ${db.s}.runs WHERE id = $1) AS found, acquired.lease_token AS token, acquired.lease_expires_at AS expires_at,
       acquired.replaced_owner, acquired.replaced_expires_at
     FROM (SELECT 1) AS one LEFT JOIN acquired ON true`,
    [runId, owner, ttlMs, clockParam(now), session],
  );
  if (!row?.found) throw runNotFound(db, runId, operation);
  if (row.token === null || row.expires_at === null) return null;
  const lease: TakenRunLease = { owner, expiresAt: row.expires_at.toISOString(), token: Number(row.token) };
  const replaced = replacedLease(row);
  return replaced ? { ...lease, replaced } : lease;
}

/** The lease a take replaced, from its `replaced_owner` / `replaced_expires_at` columns; none when the run had none. */
function replacedLease(row: { replaced_owner?: unknown; replaced_expires_at?: unknown }): Lease | undefined {
  // A lease without an end (written by hand, or by a store before leases had one) never lapsed: nothing to report.
  return typeof row.replaced_owner === "string" && row.replaced_expires_at instanceof Date
    ? { owner: row.replaced_owner, expiresAt: row.replaced_expires_at.toISOString() }
    : undefined;
}

/**
 * Extends the lease and names this process's liveness session in it (`session`, null while it
 * has none: the lease then only expires), so a lease kept alive always names a session its
 * holder holds, whichever adapter or session took it.
 */
export async function renewRunLease(db: StateDatabase, runId: string, fence: RunFence, ttlMs: number, now: Date | undefined, session: string | null): Promise<RunLease | null> {
  const operation = `renewRunLease(run "${runId}")`;
  const check = new ArgumentCheck(operation);
  check.object("fence", fence);
  check.string("fence.owner", fence.owner);
  check.nonNegative("fence.token", fence.token);
  checkLeaseTtl(operation, "ttlMs", ttlMs);
  check.optionalDate("now", now);
  checkLeaseEnd(operation, "ttlMs", ttlMs, now);
  const [row] = await db.rows<{ expires_at: Date }>(
    operation,
    `UPDATE ${db.s}.runs SET lease_expires_at = coalesce($5::timestamptz, now()) + $4::double precision * interval '1 millisecond',
       lease_session = $6::bigint
     WHERE id = $1 AND lease_owner = $2 AND lease_token = $3 AND status NOT IN ('completed', 'failed')
     RETURNING lease_expires_at AS expires_at`,
    [runId, fence.owner, fenceTokenParam(fence.token), ttlMs, clockParam(now), session],
  );
  return row ? { owner: fence.owner, expiresAt: row.expires_at.toISOString(), token: fence.token } : null;
}

export async function releaseRunLease(db: StateDatabase, runId: string, owner: string, token: number | undefined, options: ReleaseOptions): Promise<void> {
  const check = new ArgumentCheck(`releaseRunLease(run "${runId}")`);
  const observedSeq = options.observedSeq ?? null;
  if (observedSeq !== null) checkSeqNumber(check.operation, "options.observedSeq", observedSeq);
  // One statement either way: the lease goes if this owner (and token) holds it; the observers' position only moves forward.
  // A position past the run's log changes nothing (the lease stays too) and is refused below, from the row's last_seq.
  // As bigint: a position past the integer column's range is past the log, refused below, not a failed cast.
  const within = "($4::bigint IS NULL OR $4::bigint <= last_seq)";
  const holds = `(lease_owner = $2 AND ($3::bigint IS NULL OR lease_token = $3) AND ${within})`;
  const [row] = await db.rows<{ last_seq: number }>(
    check.operation,
    // Committed without waiting for its WAL flush (RunStore.releaseRunLease need not be durable
    // when it resolves): the join makes the statement run set_config, local to its transaction.
    `WITH no_flush_wait AS (SELECT set_config('synchronous_commit', 'off', true))
     UPDATE ${db.s}.runs SET
       lease_owner = CASE WHEN ${holds} THEN NULL ELSE lease_owner END,
       lease_expires_at = CASE WHEN ${holds} THEN NULL ELSE lease_expires_at END,
       lease_session = CASE WHEN ${holds} THEN NULL ELSE lease_session END,
       observed_seq = CASE WHEN ${within} THEN greatest(observed_seq, coalesce($4::bigint, observed_seq)) ELSE observed_seq END
     FROM no_flush_wait
     WHERE id = $1 AND (lease_owner = $2 AND ($3::bigint IS NULL OR lease_token = $3) OR $4::bigint > observed_seq)
     RETURNING last_seq`,
    [runId, owner, token === undefined ? null : fenceTokenParam(token), observedSeq],
  );
  if (row && observedSeq !== null) checkObservedSeq(check.operation, "options.observedSeq", observedSeq, row.last_seq);
}

export async function claimRecoverableRuns(db: StateDatabase, options: ClaimOptions, session: string | null, detectDeadHolders = true): Promise<ClaimedRunRecord[]> {
  const claim = claimParams("claimRecoverableRuns", options);
  if (claim.limit === 0) return [];
  const { text, values } = recoverableClaimStatement(db.s, claim, session, detectDeadHolders);
  const rows = await db.rows("claimRecoverableRuns", text, values);
  return rows
    .sort((a, b) => Number(a.position) - Number(b.position))
    .map((row) => {
      const run: ClaimedRunRecord = decodeRun(db.schema, row);
      const replaced = replacedLease(row);
      if (replaced) run.replacedLease = replaced;
      return run;
    });
}

/** The recovery claim's one statement on schema `s` (quoted), and its values. */
export function recoverableClaimStatement(
  s: string,
  { owner, ttlMs, now, limit, agentId }: ReturnType<typeof claimParams>,
  session: string | null,
  detectDeadHolders = true,
): { text: string; values: unknown[] } {
  const values: unknown[] = [owner, ttlMs, clockParam(now), limit, session];
  // With an agent: walks runs_recoverable_by_agent over its root agent's unfinished runs only, oldest first.
  const parameter = parameters(values);
  const ofAgent =
    agentId === undefined ? "" : `AND split_part(r.agent_id, '/', 1) = split_part(${parameter(agentId)}, '/', 1) AND ${runOfAgent("r.agent_id", agentId, parameter)}`;
  // SKIP LOCKED: concurrent claimers each take different rows instead of queueing
  // on the same ones; a row committed by another claimer meanwhile is re-checked
  // against the lease condition before it is locked.
  const text = `WITH clock AS (SELECT coalesce($3::timestamptz, now()) AS now),
     candidates AS (
       SELECT r.id, r.lease_owner, r.lease_expires_at FROM ${s}.runs r, clock
       WHERE r.status IN ('queued', 'running')
         AND (r.lease_owner IS NULL OR r.lease_expires_at IS NULL OR r.lease_expires_at <= clock.now${HOLDER_GONE("r.", detectDeadHolders)})
         ${ofAgent}
       ORDER BY r.position
       LIMIT $4
       FOR UPDATE OF r SKIP LOCKED
     ),
     claimed AS (
       UPDATE ${s}.runs r SET lease_owner = $1, lease_expires_at = clock.now + $2::double precision * interval '1 millisecond',
         lease_token = r.lease_token + 1, lease_session = $5::bigint
       FROM clock
       -- By primary key: a join with the candidates may scan the whole table in a generic plan.
       WHERE r.id = ANY (ARRAY(SELECT id FROM candidates))
       RETURNING r.position, ${prefixed("r", RUN_COLUMNS)}
     )
     -- The lease each claim replaced, as the candidates' row lock found it.
     SELECT claimed.*, candidates.lease_owner AS replaced_owner, candidates.lease_expires_at AS replaced_expires_at
     FROM claimed JOIN candidates ON candidates.id = claimed.id`;
  return { text, values };
}

/**
 * The condition on `column` (a run's agent_id) that holds for the runs of agent `agentId` and its
 * subagents, as isRunOfAgent decides: the id itself, or an id in the range under `<agentId>/`. A
 * range of the key, not `LIKE`: `_` and `%` in an agent id would match other agents' ids.
 */
export function runOfAgent(column: string, agentId: string, parameter: Parameter): string {
  return `(${column} = ${parameter(agentId)} OR (${underPrefix(column, `${agentId}/`, parameter).join(" AND ")}))`;
}

export function prefixed(alias: string, columns: string): string {
  return columns
    .split(",")
    .map((column) => `${alias}.${column.trim()}`)
    .join(", ");
}

function encodeRunCursor(position: string): string {
  return Buffer.from(JSON.stringify({ before: position }), "utf8").toString("base64url");
}

function decodeRunCursor(cursor: string): string {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (isJsonObject(parsed) && typeof parsed.before === "string" && /^\d{1,18}$/.test(parsed.before)) return parsed.before;
  } catch {
    // reported below
  }
  throw inputInvalid("listRuns", `cursor "${cursor}" was not produced by this state store; pass back nextCursor unchanged`, {
    cursor,
  });
}
