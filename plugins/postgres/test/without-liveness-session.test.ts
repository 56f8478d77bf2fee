import type { NewRun } from "@assemblyline-agents/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStateAdapter, neonPostgres, postgresState } from "../src/index.js";
import { dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgreSQL state without a liveness session");

const LEASE_MS = 120_000;
const newRun = (id: string): NewRun => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });

describe("livenessSession option", () => {
  it("is off for neonPostgres() (its pooled endpoint is a transaction-mode pooler), on for postgresState(), and either can be overridden", () => {
    expect(neonPostgres().options.livenessSession).toBe(false);
    expect(neonPostgres({ livenessSession: true }).options.livenessSession).toBe(true);
    expect(postgresState().options.livenessSession).toBeUndefined();
    expect(postgresState({ livenessSession: false }).options.livenessSession).toBe(false);
  });
});

/*
 * Behind a transaction-mode pooler the server connection that holds a replica's session lock serves
 * other clients too, so a live holder's lock looks free to a try-lock. Here the lease names a key no
 * session holds, which is what such a replica sees: without a liveness session, it must wait for expiry.
 */
describe.skipIf(!probe.available)("PostgreSQL state with livenessSession: false", () => {
  const schema = randomSchema("al_no_liveness");
  const admin = testPool();
  // A pool of one is enough: no connection is kept for a session.
  const pool = testPool({ max: 1 });
  const state = new PostgresStateAdapter({ pool, schema, livenessSession: false });
  const withSessions = new PostgresStateAdapter({ pool: testPool(), schema });

  beforeAll(async () => {
    await state.migrate();
  });
  afterAll(async () => {
    await state.close();
    await withSessions.close();
    await withSessions.pool.end();
    await pool.end();
    await dropSchema(admin, schema);
    await admin.end();
  });

  /** A run leased to another replica until LEASE_MS from now, naming a liveness key no session holds. */
  async function leasedToAGoneLookingHolder(id: string, agentId = "agent"): Promise<void> {
    await state.createRun({ ...newRun(id), agentId });
    await admin.query(
      `UPDATE "${schema}".runs SET lease_owner = 'replica-a', lease_expires_at = now() + interval '${LEASE_MS} milliseconds',
         lease_token = lease_token + 1, lease_session = 4242424242 WHERE id = $1`,
      [id],
    );
  }

  it("does not take an unexpired lease whose holder's session looks free, by acquire or by a recovery claim", async () => {
    await leasedToAGoneLookingHolder("kept");
    expect(await state.acquireRunLease("kept", "replica-b", LEASE_MS)).toBeNull();
    expect(await state.claimRecoverableRuns({ owner: "replica-b", ttlMs: LEASE_MS, agentId: "agent" })).toEqual([]);
    expect((await state.getRun("kept"))?.lease?.owner).toBe("replica-a");
  });

  it("takes that lease once it expires", async () => {
    await leasedToAGoneLookingHolder("expired", "expiring-agent");
    const later = new Date(Date.now() + LEASE_MS + 60_000);
    const claimed = await state.claimRecoverableRuns({ owner: "replica-b", ttlMs: LEASE_MS, agentId: "expiring-agent", now: later });
    expect(claimed.map((run) => [run.id, run.lease?.owner])).toEqual([["expired", "replica-b"]]);
  });

  it("is what keeps it: an adapter with its liveness session takes the same lease at once", async () => {
    await leasedToAGoneLookingHolder("taken");
    expect(await withSessions.acquireRunLease("taken", "replica-c", LEASE_MS)).toMatchObject({ owner: "replica-c" });
  });

  it("names no session in the leases it takes, and holds no advisory lock", async () => {
    await state.createRun(newRun("own"), { lease: { owner: "replica-b", ttlMs: LEASE_MS } });
    await state.createRun(newRun("acquired"));
    await state.acquireRunLease("acquired", "replica-b", LEASE_MS);
    const { rows } = await admin.query(`SELECT id, lease_session FROM "${schema}".runs WHERE id IN ('own', 'acquired') ORDER BY id`);
    expect(rows).toEqual([
      { id: "acquired", lease_session: null },
      { id: "own", lease_session: null },
    ]);
    const locks = await admin.query(
      `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND a.pid = ANY ($1)`,
      [(await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows.map((row) => row.pid)],
    );
    expect(locks.rows[0].n).toBe(0);
  });
});
