import type { NewRun } from "@assemblyline-agents/core";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { dropSchema, probeDatabase, randomSchema, testPool, urlWithApplicationName } from "./support/database.js";

const probe = await probeDatabase("PostgreSQL liveness sessions");

/** Far longer than the test: a take can only come from the holder's session being gone, never from expiry. */
const LEASE_MS = 120_000;
let runCounter = 0;
/** Each test's runs belong to an agent of their own, and its claims ask for that agent only. */
let agentId = "";
const newRun = (): NewRun => ({ id: `run-${++runCounter}`, agentId, agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });

describe.skipIf(!probe.available)("PostgreSQL liveness sessions", () => {
  const schema = randomSchema("al_liveness");
  const admin = testPool();
  const opened: PostgresStateAdapter[] = [];
  let replicas = 0;

  /** A replica: its own adapter and pool, its backends named so the test can find them. */
  async function replica(): Promise<{ state: PostgresStateAdapter; name: string }> {
    const name = `${schema}_r${++replicas}`;
    const state = new PostgresStateAdapter({ connectionString: urlWithApplicationName(name), schema });
    opened.push(state);
    await state.migrate();
    return { state, name };
  }

  /** The backends of replica `name` holding an advisory lock on `key` (the liveness session that protects a lease naming it). */
  async function holders(name: string, key: string): Promise<number[]> {
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = $1
         AND ((l.classid::bigint << 32) | l.objid::bigint) = $2::bigint`,
      [name, key],
    );
    return rows.map((row) => row.pid);
  }

  /** Any session-level advisory lock replica `name` holds, other than on backend `except`. */
  async function liveSessions(name: string, except: number): Promise<number[]> {
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = $1 AND l.pid <> $2`,
      [name, except],
    );
    return rows.map((row) => row.pid);
  }

  /** Waits (no deadline of its own: the test's timeout is the bound) until `check` holds. */
  async function until(check: () => Promise<boolean>): Promise<void> {
    while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  async function leaseSession(runId: string): Promise<string | null> {
    const { rows } = await admin.query<{ lease_session: string | null }>(`SELECT lease_session FROM "${schema}".runs WHERE id = $1`, [runId]);
    return rows[0]!.lease_session;
  }

  /** Ends replica `name`'s liveness backend the way an idle timeout or an administrator does; resolves once A has a session again. */
  async function dropLiveness(name: string, key: string): Promise<void> {
    const [pid, ...others] = await holders(name, key);
    expect(pid, "the replica holds its liveness key on one backend").toBeDefined();
    expect(others).toEqual([]);
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
    // The session is reopened as soon as the client notices; another replica's claim is tested after that
    // (the instant between the old backend's end and the new grant is the documented reconnect window).
    await until(async () => (await liveSessions(name, pid!)).length > 0);
  }

  beforeEach(() => {
    agentId = `agent-${runCounter}`;
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((state) => state.close()));
  });
  afterAll(async () => {
    await dropSchema(admin, schema);
    await admin.end();
  });

  it("never preempts a live owner whose liveness connection was terminated: the session comes back on the same key", async () => {
    const a = await replica();
    const b = await replica();
    const { run } = await a.state.createRun(newRun());
    const lease = await a.state.acquireRunLease(run.id, "replica-a", LEASE_MS);
    expect(lease).not.toBeNull();
    const key = (await leaseSession(run.id))!;

    await dropLiveness(a.name, key);

    expect(await b.state.claimRecoverableRuns({ owner: "replica-b", ttlMs: LEASE_MS, limit: 10, agentId })).toEqual([]);
    expect(await b.state.acquireRunLease(run.id, "replica-b", LEASE_MS)).toBeNull();
    expect((await holders(a.name, key)).length, "A's new session holds the key its lease names").toBe(1);

    const renewed = await a.state.renewRunLease(run.id, { owner: "replica-a", token: lease!.token }, LEASE_MS);
    expect(renewed).toMatchObject({ owner: "replica-a", token: lease!.token });
    expect(await leaseSession(run.id)).toBe(key);
    const fence = { owner: "replica-a", token: lease!.token };
    await a.state.appendEvents(run.id, [{ type: "run.completed" }], { run: { status: "completed", output: { text: "done" } } }, { fence });
    await a.state.releaseRunLease(run.id, "replica-a", lease!.token);
    expect(await a.state.getRun(run.id)).toMatchObject({ status: "completed", lease: null });
  }, 60_000);

  it("still takes a run at once when its owner's process is gone, after its liveness session was reopened", async () => {
    const a = await replica();
    const b = await replica();
    const { run } = await a.state.createRun(newRun());
    const lease = await a.state.acquireRunLease(run.id, "replica-a", LEASE_MS);
    const key = (await leaseSession(run.id))!;
    await dropLiveness(a.name, key);
    expect(await b.state.claimRecoverableRuns({ owner: "replica-b", ttlMs: LEASE_MS, limit: 10, agentId })).toEqual([]);

    // The process goes: closing the adapter destroys its connections. Once PostgreSQL has ended the session, one claim takes the run.
    await a.state.close();
    await until(async () => (await holders(a.name, key)).length === 0);
    const claimed = await b.state.claimRecoverableRuns({ owner: "replica-b", ttlMs: LEASE_MS, limit: 10, agentId });
    expect(claimed.map((taken) => [taken.id, taken.lease?.owner, taken.lease?.token])).toEqual([[run.id, "replica-b", lease!.token + 1]]);
  }, 60_000);

  it("keeps retrying to reopen the session while the database refuses it, and protects the lease again once it can", async () => {
    const b = await replica();
    // A logs in as a role of its own, so the database can refuse A's new connections while B's keep working.
    const role = `${schema}_role`;
    await admin.query(`CREATE ROLE "${role}" LOGIN SUPERUSER`);
    try {
      const name = `${schema}_refused`;
      const warnings: string[] = [];
      const logger = { warn: (_details: unknown, message: string) => warnings.push(message), info() {}, error() {}, debug() {} };
      const url = new URL(urlWithApplicationName(name));
      url.username = role;
      const a = new PostgresStateAdapter({ connectionString: url.toString(), schema, logger });
      opened.push(a);
      const { run } = await a.createRun(newRun());
      const lease = (await a.acquireRunLease(run.id, "replica-a", LEASE_MS))!;
      const key = (await leaseSession(run.id))!;

      await admin.query(`ALTER ROLE "${role}" NOLOGIN`);
      // Every connection of A's goes (its pool would otherwise hand the reopen an idle one), and no new one is let in.
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [name]);
      await until(async () => warnings.some((message) => message.includes("could not be reopened")));

      await admin.query(`ALTER ROLE "${role}" LOGIN`);
      await until(async () => (await holders(name, key)).length === 1);
      expect(await b.state.claimRecoverableRuns({ owner: "replica-b", ttlMs: LEASE_MS, limit: 10, agentId })).toEqual([]);
      expect(await a.renewRunLease(run.id, { owner: "replica-a", token: lease.token }, LEASE_MS)).not.toBeNull();
      expect(await leaseSession(run.id)).toBe(key);
      await a.close();
    } finally {
      await admin.query(`DROP ROLE IF EXISTS "${role}"`);
    }
  }, 60_000);

  it("names the renewing adapter's session in a lease, so it stands while the renewer lives", async () => {
    const first = await replica();
    const second = await replica();
    const b = await replica();
    const { run } = await first.state.createRun(newRun());
    const lease = (await first.state.acquireRunLease(run.id, "replica-a", LEASE_MS))!;
    // The second adapter of the same owner opens its own session (any lease it takes does), then keeps the first one's lease.
    const { run: other } = await second.state.createRun(newRun());
    await second.state.acquireRunLease(other.id, "replica-a", LEASE_MS);
    const secondKey = (await leaseSession(other.id))!;
    expect(await second.state.renewRunLease(run.id, { owner: "replica-a", token: lease.token }, LEASE_MS)).not.toBeNull();
    expect(await leaseSession(run.id)).toBe(secondKey);

    await first.state.close();
    await until(async () => (await liveSessions(first.name, 0)).length === 0);
    expect(await b.state.claimRecoverableRuns({ owner: "replica-b", ttlMs: LEASE_MS, limit: 10, agentId })).toEqual([]);
  }, 60_000);
});
