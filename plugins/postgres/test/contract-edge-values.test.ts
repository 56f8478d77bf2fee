import type { NewRun, StateAdapter } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "../src/index.js";
import { dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgresStateAdapter values at the contract's edges");

const newRun = (id: string, metadata: unknown = {}): NewRun =>
  ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata } }) as NewRun;

/** The error code a call fails with, or "resolved". */
async function outcome(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (caught: unknown) => caught);
  return error === undefined ? "resolved" : String((error as { code?: string }).code);
}

class Instance {
  readonly kind = "instance";
}

/*
 * Each case asks PostgreSQL and the runtime's in-memory state the same thing: the state contract's
 * answer, the same from both, never a failed query (AL_ERR_STATE_QUERY) or a row nothing can read.
 */
describe.skipIf(!probe.available)("PostgresStateAdapter: values at the contract's edges", () => {
  const schema = randomSchema("al_edges");
  const pool = testPool();
  const postgres = new PostgresStateAdapter({ pool, schema });
  const stores: [string, () => StateAdapter][] = [
    ["in-memory", () => memory],
    ["postgres", () => postgres],
  ];
  let memory = new InMemoryStateAdapter();

  beforeAll(async () => {
    await postgres.migrate();
  });
  afterAll(async () => {
    await postgres.close();
    await dropSchema(pool, schema);
    await pool.end();
  });

  /** Both stores' answers to `ask`, by store name. */
  async function both<T>(ask: (store: StateAdapter) => Promise<T>): Promise<Record<string, T>> {
    const answers: Record<string, T> = {};
    for (const [name, store] of stores) answers[name] = await ask(store());
    return answers;
  }

  it("refuses a run whose input metadata JSON would not keep as an object, storing nothing, so recovery and listings go on", async () => {
    memory = new InMemoryStateAdapter();
    await both((store) => store.createRun(newRun("good")));
    for (const metadata of [new Date(0), { toJSON: () => "text" }, new Instance()]) {
      expect(await both((store) => outcome(store.createRun(newRun("bad", metadata))))).toEqual({ "in-memory": "AL_ERR_STATE_INPUT_INVALID", postgres: "AL_ERR_STATE_INPUT_INVALID" });
    }
    await expect(postgres.createRun(newRun("bad", new Date(0)))).rejects.toThrow(/run\.input\.metadata must be a plain JSON object/);
    expect((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".runs WHERE id = 'bad'`)).rows[0].n).toBe(0);
    expect((await postgres.claimRecoverableRuns({ owner: "host", ttlMs: 60_000 })).map((run) => run.id)).toEqual(["good"]);
    expect((await postgres.listRuns()).runs.map((run) => run.id)).toEqual(["good"]);
  });

  it("refuses event data and step metadata that JSON would not keep as an object, and the run's log still reads", async () => {
    await both((store) => store.createRun(newRun("dated")));
    expect(await both((store) => outcome(store.appendEvents("dated", [{ type: "x", data: new Date(0) as never }])))).toEqual({
      "in-memory": "AL_ERR_STATE_INPUT_INVALID",
      postgres: "AL_ERR_STATE_INPUT_INVALID",
    });
    await expect(postgres.appendEvents("dated", [{ type: "x", data: new Instance() as never }])).rejects.toThrow(/events\[0\]\.data must be a plain JSON object/);
    const step = { runId: "dated", key: "s1", result: 1, metadata: new Date(0) as never, createdAt: new Date(0).toISOString() };
    await expect(postgres.appendEvents("dated", [{ type: "step.completed" }], { step })).rejects.toThrow(/change\.step\.metadata must be a plain JSON object/);
    expect((await postgres.listEvents("dated")).map((event) => event.seq)).toEqual([1]);
    expect(await postgres.getStep("dated", "s1")).toBeUndefined();
  });

  it("replaces and deletes a schedule whose payload holds \\u0000 or a lone surrogate, which jsonb cannot hold", async () => {
    for (const [id, text] of [["nul", "a\u0000b"], ["surrogate", "a\ud800b"]] as const) {
      const schedule = { id, intervalMs: 60_000, nextRunAt: "2030-01-01T00:00:00.000Z", payload: { text, other: 1 }, enabled: true };
      await both((store) => store.upsertSchedule(schedule));
      // Keys in another order are the same payload, as every store compares it.
      const reordered = { ...schedule, payload: { other: 1, text } };
      expect(await both((store) => store.replaceSchedule!(reordered, { ...schedule, enabled: false }))).toEqual({ "in-memory": true, postgres: true });
      expect(await both((store) => store.replaceSchedule!(schedule, { ...schedule, intervalMs: 1 }))).toEqual({ "in-memory": false, postgres: false });
      expect(await both((store) => store.deleteScheduleIf!({ ...schedule, payload: { text: `${text}!`, other: 1 }, enabled: false }))).toEqual({ "in-memory": false, postgres: false });
      expect(await both((store) => store.deleteScheduleIf!({ ...schedule, enabled: false }))).toEqual({ "in-memory": true, postgres: true });
      expect(await postgres.getSchedule(id)).toBeUndefined();
    }
  });

  it("answers seq positions past 2^31 - 1 as for any position past the log", async () => {
    await both((store) => store.createRun(newRun("long")));
    const big = 2 ** 31;
    expect(await both((store) => store.listEvents("long", { afterSeq: big }))).toEqual({ "in-memory": [], postgres: [] });
    const code = { "in-memory": "AL_ERR_EVENT_SEQ", postgres: "AL_ERR_EVENT_SEQ" };
    expect(await both((store) => outcome(store.appendEvents("long", [{ type: "x" }], undefined, { expectedLastSeq: big })))).toEqual(code);
    const refused = { "in-memory": "AL_ERR_STATE_INPUT_INVALID", postgres: "AL_ERR_STATE_INPUT_INVALID" };
    expect(await both((store) => outcome(store.markObserved("long", big)))).toEqual(refused);
    expect(await both((store) => outcome(store.appendEvents("long", [{ type: "x" }], undefined, { observedSeq: big })))).toEqual(refused);
    expect(await both((store) => outcome(store.releaseRunLease("long", "nobody", undefined, { observedSeq: big })))).toEqual(refused);
    expect((await postgres.getRun("long"))?.lastSeq).toBe(1);
  });

  it("treats a fence token that is not a whole number as a stale fence", async () => {
    await both(async (store) => {
      await store.createRun(newRun("fenced"));
      await store.acquireRunLease("fenced", "me", 60_000);
    });
    const fence = { owner: "me", token: 1.5 };
    expect(await both((store) => store.renewRunLease("fenced", fence, 60_000))).toEqual({ "in-memory": null, postgres: null });
    const lost = { "in-memory": "AL_ERR_RUN_LEASE_LOST", postgres: "AL_ERR_RUN_LEASE_LOST" };
    expect(await both((store) => outcome(store.appendEvents("fenced", [{ type: "x" }], undefined, { fence })))).toEqual(lost);
    await both((store) => store.releaseRunLease("fenced", "me", 1.5));
    expect((await postgres.getRun("fenced"))?.lease?.owner).toBe("me");
  });

  it("refuses a lease that would end past the last time a Date holds", async () => {
    await both((store) => store.createRun(newRun("forever")));
    const refused = { "in-memory": "AL_ERR_STATE_INPUT_INVALID", postgres: "AL_ERR_STATE_INPUT_INVALID" };
    expect(await both((store) => outcome(store.acquireRunLease("forever", "me", 1e16)))).toEqual(refused);
    expect(await both((store) => outcome(store.claimRecoverableRuns({ owner: "me", ttlMs: 1e16 })))).toEqual(refused);
    expect(await both((store) => outcome(store.createRun(newRun("forever-2"), { lease: { owner: "me", ttlMs: 1e16 } })))).toEqual(refused);
  });
});
