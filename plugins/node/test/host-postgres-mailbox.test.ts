import { beforeAll, describe, expect, it } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { postgresSchemas } from "./support/postgres-schemas.js";
import { call, fixtureBundle, fixtureProbe, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

/** One PostgreSQL schema per test when the test database answers, all dropped after the file. */
const postgres = await postgresSchemas("the mailbox on PostgreSQL state", "al_host_mailbox");

/** Runs the fixture's slow step for `ms` in every run `work` starts. */
async function withSlowStep<T>(ms: number, work: () => Promise<T>): Promise<T> {
  process.env.HOST_FIXTURE_STEP_MS = String(ms);
  try {
    return await work();
  } finally {
    process.env.HOST_FIXTURE_STEP_MS = "150";
  }
}

describe.skipIf(!postgres.available)("the mailbox on PostgreSQL state", () => {
  it("answers 429 to turns of one conversation that arrive together beyond maxQueuedRuns, instead of letting them all wait", async () => {
    await withSlowStep(1_500, async () => {
      const host = await startHost(bundle, { state: await postgres.state(), maxConcurrentRuns: 16, maxQueuedRuns: 1 });
      const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => call(`${host.url}/message`, { body: { message: `slow: ${i}`, conversationId: "c-burst" } })));
      const accepted = replies.filter((reply) => reply.status === 202);
      // One starts, one waits: the conversation runs one turn at a time, and maxQueuedRuns is 1.
      expect(accepted).toHaveLength(2);
      expect(replies.filter((reply) => reply.status === 429)).toHaveLength(8);
      expect((await call(`${host.url}/readyz`)).body).toMatchObject({ executing: 1, waiting: 1 });
      // Every reservation was given back: once the turns have run, the next one starts at once.
      await waitFor(async () => ((await call(`${host.url}/readyz`)).body.waiting === 0 && (await call(`${host.url}/readyz`)).body.executing === 0) || undefined, 15_000, "the accepted turns to run");
      const next = await call(`${host.url}/message?wait=10`, { body: { message: "echo: after", conversationId: "c-burst" } });
      expect(next.body.status).toBe("completed");
    });
  });

  it("does not start a conversation's queued turn on a duplicate sent to another replica while the turn before it still runs", async () => {
    await withSlowStep(1_500, async () => {
      const schema = postgres.newSchema();
      const a = await startHost(bundle, { state: await postgres.state(schema) });
      const b = await startHost(bundle, { state: await postgres.state(schema) });
      Object.assign(fixtureProbe(), { active: 0, maxActive: 0, order: [] });
      const first = await call(`${a.url}/message`, { body: { message: "slow: first", conversationId: "c-two-replicas" }, headers: { "idempotency-key": "turn-1" } });
      await waitFor(async () => ((await a.runtime.state.runs.getRun(first.body.runId))?.status === "running" ? true : undefined));
      const second = await call(`${a.url}/message`, { body: { message: "slow: second", conversationId: "c-two-replicas" }, headers: { "idempotency-key": "turn-2" } });
      expect(second.status).toBe(202);
      // The client retries the second turn, and the balancer sends the retry to the other replica.
      const retried = await call(`${b.url}/message`, { body: { message: "slow: second", conversationId: "c-two-replicas" }, headers: { "idempotency-key": "turn-2" } });
      expect(retried).toMatchObject({ status: 200, body: { runId: second.body.runId, duplicate: true } });
      await waitFor(async () => ((await a.runtime.state.runs.getRun(second.body.runId))?.status === "completed" ? true : undefined), 15_000, "the second turn to complete");
      // The conversation ran one turn at a time, in the order they were accepted.
      expect(fixtureProbe().maxActive).toBe(1);
      expect(fixtureProbe().order).toEqual([`start:${first.body.runId}`, `end:${first.body.runId}`, `start:${second.body.runId}`, `end:${second.body.runId}`]);
    });
  });

  it("starts a queued turn that a stopped process left, older than twice the lease TTL, when its duplicate arrives", async () => {
    // Past the boot sweep, the next sweep is far off: only the duplicate can start the run.
    const host = await startHost(bundle, { state: await postgres.state(), leaseTtlMs: 200, recoveryIntervalMs: 2_147_483_647 });
    // Stored queued as the message route stores a turn, by a process whose mailbox is gone.
    const left = await host.runtime.submit({
      message: "echo: left behind",
      conversationId: "c-left",
      metadata: {},
      idempotencyKey: "message:turn-left",
      channel: { name: "message", metadata: { eventId: "turn-left" } },
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const retried = await call(`${host.url}/message?wait=10`, { body: { message: "echo: left behind", conversationId: "c-left" }, headers: { "idempotency-key": "turn-left" } });
    expect(retried.body).toMatchObject({ runId: left.runId, duplicate: true, status: "completed" });
  });
});

describe.skipIf(!postgres.available)("a conversation's turns across replicas on PostgreSQL state", () => {
  it("starts a turn sent to another replica only once the turn before it, running on the first, has ended", async () => {
    await withSlowStep(1_000, async () => {
      const schema = postgres.newSchema();
      const a = await startHost(bundle, { state: await postgres.state(schema) });
      const b = await startHost(bundle, { state: await postgres.state(schema) });
      Object.assign(fixtureProbe(), { active: 0, maxActive: 0, order: [] });
      const first = await call(`${a.url}/message`, { body: { message: "slow: first", conversationId: "c-across" } });
      await waitFor(async () => ((await a.runtime.state.runs.getRun(first.body.runId))?.status === "running" ? true : undefined));
      const second = await call(`${b.url}/message`, { body: { message: "slow: second", conversationId: "c-across" } });
      expect(second.status).toBe(202);
      await waitFor(async () => ((await b.runtime.state.runs.getRun(second.body.runId))?.status === "completed" ? true : undefined), 15_000, "the second turn to complete");
      expect(fixtureProbe().maxActive).toBe(1);
      expect(fixtureProbe().order).toEqual([`start:${first.body.runId}`, `end:${first.body.runId}`, `start:${second.body.runId}`, `end:${second.body.runId}`]);
    });
  });

  it("does not start a queued turn another replica's sweep adopted beside the running turn before it, however long that one runs", async () => {
    await withSlowStep(1_500, async () => {
      const schema = postgres.newSchema();
      // Sweeps often, and a queued turn counts as left behind after 2 x 200 ms, well within the first turn's run.
      const options = { leaseTtlMs: 200, recoveryIntervalMs: 200 };
      const a = await startHost(bundle, { state: await postgres.state(schema), ...options });
      // The other replica: its sweep finds the second turn queued, unleased and old enough to adopt.
      await startHost(bundle, { state: await postgres.state(schema), ...options });
      Object.assign(fixtureProbe(), { active: 0, maxActive: 0, order: [] });
      const first = await call(`${a.url}/message`, { body: { message: "slow: first", conversationId: "c-adopted" } });
      await waitFor(async () => ((await a.runtime.state.runs.getRun(first.body.runId))?.status === "running" ? true : undefined));
      const second = await call(`${a.url}/message`, { body: { message: "slow: second", conversationId: "c-adopted" } });
      expect(second.status).toBe(202);
      await waitFor(async () => ((await a.runtime.state.runs.getRun(second.body.runId))?.status === "completed" ? true : undefined), 15_000, "the second turn to complete");
      expect(fixtureProbe().maxActive).toBe(1);
      expect(fixtureProbe().order).toEqual([`start:${first.body.runId}`, `end:${first.body.runId}`, `start:${second.body.runId}`, `end:${second.body.runId}`]);
    });
  });
});
