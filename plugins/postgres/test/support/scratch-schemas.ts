import { afterAll } from "vitest";
import type pg from "pg";
import { MIGRATIONS, migrateSchema } from "../../src/index.js";
import { dropSchema, randomSchema, testPool } from "./database.js";

/**
 * A test file's pool and fresh schemas (`newSchema()`), all named under one random prefix and
 * dropped after the file, when the pool ends.
 */
export function scratchSchemas(label: string): { admin: pg.Pool; newSchema: () => string } {
  const prefix = randomSchema(label);
  let counter = 0;
  const admin = testPool();
  afterAll(async () => {
    const { rows } = await admin.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [prefix]);
    for (const row of rows) await dropSchema(admin, row.nspname);
    await admin.end();
  });
  return { admin, newSchema: () => `${prefix}_${++counter}` };
}

/**
 * `count` runs written as SQL rows, as a store holds them (no adapter call): ids `<idPrefix>-1` onwards,
 * of `agentId`, with `status`, in `conversationId` (none by default).
 */
export async function insertRuns(
  admin: pg.Pool,
  schema: string,
  { idPrefix, agentId, status, count, conversationId = null }: { idPrefix: string; agentId: string; status: string; count: number; conversationId?: string | null },
): Promise<void> {
  await admin.query(
    `INSERT INTO "${schema}".runs (id, agent_id, agent_revision, conversation_id, status, model_spec, input)
     SELECT $1 || '-' || i, $2, 'rev', $3, $4, 'm', '{"message": "hi", "metadata": {}}' FROM generate_series(1, $5) AS i`,
    [idPrefix, agentId, conversationId, status, count],
  );
}

/**
 * Migrates `schema` up to the migration named `name`, not including it, as a store of an older
 * release; returns the versions a `migrate()` of this release then applies, that one first.
 */
export async function migratedUpTo(admin: pg.Pool, schema: string, name: string): Promise<number[]> {
  const target = MIGRATIONS.find((migration) => migration.name === name);
  if (!target) throw new Error(`no migration is named "${name}"`);
  await migrateSchema(
    admin,
    schema,
    MIGRATIONS.filter((migration) => migration.version < target.version),
  );
  return MIGRATIONS.filter((migration) => migration.version >= target.version).map((migration) => migration.version);
}

export type PlanMode = "force_generic_plan" | "force_custom_plan";

/**
 * The executed plan (EXPLAIN ANALYZE, without costs or timings) of a statement prepared as the
 * adapter prepares it, with `values`: once planned for any values (the generic plan PostgreSQL
 * switches to after five runs on a connection) and once for these. Each runs in a transaction
 * rolled back, so a statement that writes leaves nothing.
 */
export async function executedPlans(admin: pg.Pool, statement: { text: string; values: unknown[] }): Promise<Record<PlanMode, string>> {
  const client = await admin.connect();
  const literal = (value: unknown) => (value === null || value === undefined ? "NULL" : typeof value === "number" ? String(value) : `'${String(value).replaceAll("'", "''")}'`);
  const plans = {} as Record<PlanMode, string>;
  try {
    await client.query(`PREPARE planned AS ${statement.text}`);
    for (const mode of ["force_generic_plan", "force_custom_plan"] as const) {
      await client.query("BEGIN");
      try {
        await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
        const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE planned (${statement.values.map(literal).join(", ")})`);
        plans[mode] = rows.map((row) => row["QUERY PLAN"]).join("\n");
      } finally {
        await client.query("ROLLBACK");
      }
    }
    await client.query("DEALLOCATE planned");
  } finally {
    client.release();
  }
  return plans;
}
