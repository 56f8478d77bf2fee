import type { NewRun } from "@assemblyline-agents/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { TEST_DATABASE_URL, dropSchema, probeDatabase, randomSchema, testPool, urlWithApplicationName } from "./support/database.js";

const probe = await probeDatabase("PostgresStateAdapter concurrency");

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let runCounter = 0;
const newRun = (overrides: Partial<NewRun> = {}): NewRun => ({
  id: `run-${++runCounter}`,
  agentId: "agent",
  agentRevision: "rev",
  modelSpec: "scripted/test",
  input: { message: "hi", metadata: {} },
  ...overrides,
});

describe.skipIf(!probe.available)("PostgresStateAdapter under concurrency and failure", () => {
  const schema = randomSchema();
  const admin = testPool();
  let state: PostgresStateAdapter;

  beforeAll(async () => {
    // Its own pool, big enough that 50 appenders really hold 50 connections.
    state = new PostgresStateAdapter({ connectionString: urlWithApplicationName(schema), schema, maxConnections: 50 });
    await state.migrate();
  });
  afterAll(async () => {
    await state?.close();
    await dropSchema(admin, schema);
    await admin.end();
  });

  it("keeps seq contiguous and each batch unbroken with 50 appenders on separate connections", async () => {
    const { run } = await state.createRun(newRun());
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, writer) =>
        state.appendEvents(
          run.id,
          Array.from({ length: 1 + (writer % 3) }, (_, part) => ({ type: "test.write", data: { writer, part } })),
          {
            toolCall: {
              runId: run.id,
              callId: `call-${writer}`,
              toolName: "echo",
              input: { writer },
              inputDigest: "d",
              status: "completed",
              output: writer,
              modelOutput: null,
              error: null,
              approvalId: null,
              question: null,
              createdAt: new Date().toISOString(),
              updatedAt: new Date().toISOString(),
            },
            step: { runId: run.id, key: `step-${writer}`, result: writer, metadata: {}, createdAt: new Date().toISOString() },
          },
        ),
      ),
    );
    expect(state.pool.totalCount).toBeGreaterThan(10);

    const events = await state.listEvents(run.id);
    const expected = 1 + results.reduce((sum, batch) => sum + batch.length, 0);
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: expected }, (_, i) => i + 1));
    for (const batch of results) {
      for (let i = 1; i < batch.length; i++) expect(batch[i]!.seq).toBe(batch[i - 1]!.seq + 1);
      // What the call returned is what was stored.
      for (const event of batch) expect(events[event.seq - 1]).toEqual(event);
    }
    expect((await state.getRun(run.id))?.lastSeq).toBe(expected);
    expect(await state.listToolCalls(run.id)).toHaveLength(50);
  });

  it("hands each recoverable run to exactly one of 8 replicas claiming at once, skipping locked rows", async () => {
    const agentId = "claim-agent";
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) ids.push((await state.createRun(newRun({ agentId }))).run.id);
    const replicas = Array.from({ length: 8 }, () => new PostgresStateAdapter({ connectionString: TEST_DATABASE_URL, schema, maxConnections: 2 }));
    try {
      const claimedBy = new Map<string, string[]>();
      await Promise.all(
        replicas.map(async (replica, index) => {
          const owner = `replica-${index}`;
          for (;;) {
            const claimed = await replica.claimRecoverableRuns({ owner, ttlMs: 60_000, limit: 5 });
            if (claimed.length === 0) return;
            for (const run of claimed) claimedBy.set(run.id, [...(claimedBy.get(run.id) ?? []), owner]);
          }
        }),
      );
      const mine = [...claimedBy].filter(([id]) => ids.includes(id));
      expect(mine).toHaveLength(120);
      expect(mine.filter(([, owners]) => owners.length !== 1)).toEqual([]);
      const stored = await state.getRun(ids[0]!);
      expect(stored?.lease?.owner).toBe(claimedBy.get(ids[0]!)![0]);
    } finally {
      await Promise.all(replicas.map((replica) => replica.close()));
    }
  });

  it("skips runs another transaction has locked instead of waiting for them", async () => {
    const agentId = "locked-agent";
    const locked = (await state.createRun(newRun({ agentId }))).run;
    const free = (await state.createRun(newRun({ agentId }))).run;
    const holder = await admin.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM "${schema}".runs WHERE id = $1 FOR UPDATE`, [locked.id]);
      const started = Date.now();
      // Runs the closed replicas of earlier tests held are claimable too (their holders are gone): claim them all.
      const claimed = (await state.claimRecoverableRuns({ owner: "x", ttlMs: 60_000, limit: 10_000 })).map((run) => run.id);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(claimed).toContain(free.id);
      expect(claimed).not.toContain(locked.id);
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
  });

  it("lets a lease expire on the database clock, and a heartbeat keeps it", async () => {
    const { run } = await state.createRun(newRun({ status: "waiting_input" }));
    const lease = await state.acquireRunLease(run.id, "a", 400);
    expect(lease).not.toBeNull();
    expect(await state.acquireRunLease(run.id, "b", 400)).toBeNull();
    await sleep(250);
    expect(await state.renewRunLease(run.id, lease!, 400)).not.toBeNull(); // heartbeat
    await sleep(250);
    expect(await state.acquireRunLease(run.id, "b", 400)).toBeNull(); // would have expired without it
    await sleep(450);
    expect(await state.acquireRunLease(run.id, "b", 400)).not.toBeNull();
    expect((await state.getRun(run.id))?.lease?.owner).toBe("b");
  });

  it("returns a run and a delivery to the claim pool when their leases expire", async () => {
    const { run } = await state.createRun(newRun({ status: "running", agentId: "expiry-agent" }));
    await state.appendEvents(run.id, [{ type: "run.completed" }], { delivery: { id: `delivery-${run.id}`, channel: "http", payload: {} } });
    const ids = (runs: { id: string }[]) => runs.map((r) => r.id);

    expect(ids(await state.claimRecoverableRuns({ owner: "a", ttlMs: 300 }))).toContain(run.id);
    expect(ids(await state.claimDeliveries({ owner: "a", ttlMs: 300 }))).toContain(`delivery-${run.id}`);
    expect(ids(await state.claimRecoverableRuns({ owner: "b", ttlMs: 300 }))).not.toContain(run.id);
    expect(ids(await state.claimDeliveries({ owner: "b", ttlMs: 300 }))).not.toContain(`delivery-${run.id}`);
    await sleep(400);
    expect(ids(await state.claimRecoverableRuns({ owner: "b", ttlMs: 300 }))).toContain(run.id);
    expect(ids(await state.claimDeliveries({ owner: "b", ttlMs: 300 }))).toContain(`delivery-${run.id}`);
    // The first worker lost its lease: its late completion must not count.
    await state.completeDelivery(`delivery-${run.id}`, "a");
    expect((await state.listDeliveries(run.id))[0]).toMatchObject({ status: "pending", lease: { owner: "b" } });
  });

  it("leaves no torn state when the connection dies in the middle of an append, and keeps working", async () => {
    const { run } = await state.createRun(newRun());
    await state.appendEvents(run.id, [{ type: "run.started" }], { run: { status: "running" } });

    // A transaction that holds the delivery id: the append inserts its events and
    // tool call, then waits on that id, which parks it mid-transaction.
    const blocker = new pg.Client({ connectionString: TEST_DATABASE_URL });
    blocker.on("error", () => undefined);
    await blocker.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query(
        `INSERT INTO "${schema}".deliveries (id, run_id, channel, payload, status, available_at, created_at, updated_at)
         VALUES ('held-delivery', $1, 'http', '{}', 'pending', now(), now(), now())`,
        [run.id],
      );

      const at = new Date().toISOString();
      const append = state.appendEvents(run.id, [{ type: "tool.completed" }, { type: "run.completed" }], {
        run: { status: "completed", output: "done" },
        toolCall: {
          runId: run.id, callId: "c1", toolName: "echo", input: {}, inputDigest: "d", status: "completed", output: 1,
          modelOutput: null, error: null, approvalId: null, question: null, createdAt: at, updatedAt: at,
        },
        checkpoint: { runId: run.id, continuation: { v: 1 }, createdAt: at },
        delivery: { id: "held-delivery", channel: "http", payload: { text: "done" } },
      });
      const outcome = append.then(() => "committed", (error: unknown) => error);

      // Waiting on a lock after it has written (it holds a transaction id), so the kill lands mid-transaction.
      // Looked for until then: on a loaded machine the append may be seen before its first write.
      let victim: { pid: number; backend_xid: string | null } | undefined;
      for (let i = 0; i < 250 && !victim; i++) {
        const { rows } = await admin.query<{ pid: number; backend_xid: string | null }>(
          `SELECT pid, backend_xid::text FROM pg_stat_activity
           WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE '%append_events%' AND backend_xid IS NOT NULL`,
          [schema],
        );
        victim = rows[0];
        if (!victim) await sleep(20);
      }
      expect(victim, "the append never blocked on the held delivery after writing").toBeDefined();
      await admin.query("SELECT pg_terminate_backend($1)", [victim!.pid]);

      expect(await outcome).toMatchObject({ name: "AssemblyLineError", code: "AL_ERR_STATE_UNAVAILABLE" });
    } finally {
      // Also frees a blocked append if an expectation above failed.
      await blocker.query("ROLLBACK").catch(() => undefined);
      await blocker.end();
    }

    // Nothing of the append survived: not the events, not any part of the change.
    expect((await state.listEvents(run.id)).map((event) => event.type)).toEqual(["run.created", "run.started"]);
    expect(await state.getRun(run.id)).toMatchObject({ lastSeq: 2, status: "running", output: null });
    expect(await state.getToolCall(run.id, "c1")).toBeUndefined();
    expect(await state.getCheckpoint(run.id)).toBeUndefined();
    expect(await state.listDeliveries(run.id)).toEqual([]);

    // The adapter carries on, and the retried append lands at the next seq.
    const retried = await state.appendEvents(run.id, [{ type: "run.completed" }], {
      run: { status: "completed" },
      delivery: { id: "held-delivery", channel: "http", payload: { text: "done" } },
    });
    expect(retried.map((event) => event.seq)).toEqual([3]);
    expect(await state.listDeliveries(run.id)).toHaveLength(1);
  });

  it("replaces pooled connections the server terminated while idle", async () => {
    await Promise.all([state.getRun("warm-up"), state.getRun("warm-up"), state.getRun("warm-up")]);
    const { rows } = await admin.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle'`,
      [schema],
    );
    expect(rows.length).toBeGreaterThan(0);
    for (let i = 0; i < 50 && state.pool.idleCount > 0; i++) await sleep(20);
    expect(state.pool.idleCount).toBe(0);
    const { run } = await state.createRun(newRun());
    expect((await state.getRun(run.id))?.lastSeq).toBe(1);
  });
});
