import pg from "pg";
import { afterAll } from "vitest";
import { createPostgresState, type PostgresStateAdapter } from "@assemblyline-agents/postgres";
import { TEST_DATABASE_URL, probeDatabase, randomSchema } from "../../../plugins/postgres/test/support/database.js";

/**
 * PostgreSQL for a test file whose hosts share one schema (replicas): the schemas and states it
 * makes, and what it asks to close, are closed and dropped after the file. In CI an unreachable
 * database fails the file (probeDatabase); elsewhere `available` is false and the file skips.
 */
export async function sharedPostgres(suite: string) {
  const database = await probeDatabase(suite);
  const schemas: string[] = [];
  const states: PostgresStateAdapter[] = [];
  const closing: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closing) await close().catch(() => undefined);
    for (const state of states) await state.close().catch(() => undefined);
    if (!database.available) return;
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });
  return {
    available: database.available,
    /** A fresh schema's name, dropped after the file. */
    schema(prefix: string): string {
      const schema = randomSchema(prefix);
      schemas.push(schema);
      return schema;
    },
    /** A state on `schema` with connections of its own, as each replica has; closed after the file. */
    async state(schema: string): Promise<PostgresStateAdapter> {
      const state = await createPostgresState({ connectionString: TEST_DATABASE_URL, schema });
      states.push(state);
      return state;
    },
    /** Closed after the file, before the states. */
    closeLater(close: () => Promise<void>): void {
      closing.push(close);
    },
  };
}
