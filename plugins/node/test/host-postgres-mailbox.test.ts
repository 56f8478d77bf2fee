import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresState } from "@assemblyline-agents/postgres";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { TEST_DATABASE_URL, dropSchema, probeDatabase, randomSchema, testPool } from "../../postgres/test/support/database.js";
import { call, fixtureBundle, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

/** One PostgreSQL schema per test when the test database answers, all dropped after the file. */
const database = await probeDatabase("the mailbox on PostgreSQL state");
const schemaPrefix = randomSchema("al_host_mailbox");
let schemas = 0;
afterAll(async () => {
  if (!database.available) return;
  const pool = testPool();
  const { rows } = await pool.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [schemaPrefix]);
  for (const row of rows) await dropSchema(pool, row.nspname);
  await pool.end();
});

const postgresState = (schema = `${schemaPrefix}_${++schemas}`) => createPostgresState({ connectionString: TEST_DATABASE_URL, schema });

/** Runs the fixture's slow step for `ms` in every run `work` starts. */
async function withSlowStep<T>(ms: number, work: () => Promise<T>): Promise<T> {
  process.env.HOST_FIXTURE_STEP_MS = String(ms);
  try {
    return await work();
  } finally {
    process.env.HOST_FIXTURE_STEP_MS = "150";
  }
}

describe.skipIf(!database.available)("the mailbox on PostgreSQL state", () => {
  it("answers 429 to turns of one conversation that arrive together beyond maxQueuedRuns, instead of letting them all wait", async () => {
    await withSlowStep(1_500, async () => {
      const host = await startHost(bundle, { state: await postgresState(), maxConcurrentRuns: 16, maxQueuedRuns: 1 });
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
});
