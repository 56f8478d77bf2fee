import { afterAll } from "vitest";
import { createPostgresState } from "@assemblyline-agents/postgres";
import { TEST_DATABASE_URL, dropSchema, probeDatabase, randomSchema, testPool } from "../../../postgres/test/support/database.js";

/**
 * PostgreSQL state for the host tests of one file: a fresh schema per `newSchema()` (two hosts given
 * the same one are replicas on one store), every one dropped after the file. `available` is false
 * when the test database does not answer (probeDatabase throws in CI instead); `suite` names the file's
 * tests in what it says then.
 */
export async function postgresSchemas(suite: string, prefix: string) {
  const database = await probeDatabase(suite);
  const schemaPrefix = randomSchema(prefix);
  let schemas = 0;
  afterAll(async () => {
    if (!database.available) return;
    const pool = testPool();
    const { rows } = await pool.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [schemaPrefix]);
    for (const row of rows) await dropSchema(pool, row.nspname);
    await pool.end();
  });
  const newSchema = () => `${schemaPrefix}_${++schemas}`;
  return {
    available: database.available,
    newSchema,
    /** A state adapter on `schema`, a fresh one by default. */
    state: (schema = newSchema()) => createPostgresState({ connectionString: TEST_DATABASE_URL, schema }),
  };
}
