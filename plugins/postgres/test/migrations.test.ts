import { isAssemblyLineError } from "@assemblyline-agents/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LATEST_SCHEMA_VERSION, MIGRATIONS, PostgresStateAdapter, createPostgresState, migrateSchema, postgresState } from "../src/index.js";
import { TEST_DATABASE_URL, dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

const probe = await probeDatabase("PostgresStateAdapter migrations");

describe.skipIf(!probe.available)("PostgresStateAdapter migrations", () => {
  const prefix = randomSchema("al_mig");
  let counter = 0;
  const pool = testPool();
  const nextSchema = () => `${prefix}_${++counter}`;

  beforeAll(async () => {
    await pool.query("SELECT 1");
  });
  afterAll(async () => {
    const { rows } = await pool.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [prefix]);
    for (const row of rows) await dropSchema(pool, row.nspname);
    await pool.end();
  });

  it("migrates once when several replicas boot against a fresh schema at the same moment", async () => {
    const schema = nextSchema();
    // Separate pools: each replica has its own connections, as separate processes would.
    const replicas = Array.from({ length: 5 }, () => new PostgresStateAdapter({ connectionString: TEST_DATABASE_URL, schema }));
    try {
      const results = await Promise.all(replicas.map((replica) => replica.migrate()));
      const applied = results.map((result) => result.applied);
      expect(applied.filter((versions) => versions.length > 0)).toEqual([MIGRATIONS.map((m) => m.version)]);
      expect(results.every((result) => result.to === LATEST_SCHEMA_VERSION)).toBe(true);
      const { rows } = await pool.query(`SELECT version FROM "${schema}".schema_migrations`);
      expect(rows).toHaveLength(MIGRATIONS.length);
      // Every replica works on the one schema.
      await replicas[0]!.createRun({ id: "r1", agentId: "a", agentRevision: "1", modelSpec: "m", input: { message: "hi", metadata: {} } });
      expect((await replicas[4]!.getRun("r1"))?.lastSeq).toBe(1);
    } finally {
      await Promise.all(replicas.map((replica) => replica.close()));
    }
  });

  it("runs the migrations on first use when migrate() was not called", async () => {
    const schema = nextSchema();
    const state = new PostgresStateAdapter({ pool, schema });
    expect(await state.getRun("nothing")).toBeUndefined();
    const { rows } = await pool.query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations`);
    expect(rows.map((row) => row.version)).toEqual(MIGRATIONS.map((migration) => migration.version));
    await state.close();
  });

  it("applies only the versions a schema lacks", async () => {
    const schema = nextSchema();
    expect((await migrateSchema(pool, schema)).applied).toEqual(MIGRATIONS.map((migration) => migration.version));
    const next = { version: LATEST_SCHEMA_VERSION + 1, name: "test column", sql: (s: string) => `ALTER TABLE ${s}.runs ADD COLUMN test_note text` };
    expect(await migrateSchema(pool, schema, [...MIGRATIONS, next])).toMatchObject({ from: LATEST_SCHEMA_VERSION, to: next.version, applied: [next.version] });
    expect((await migrateSchema(pool, schema, [...MIGRATIONS, next])).applied).toEqual([]);
  });

  it("refuses to boot on a schema a newer release migrated", async () => {
    const schema = nextSchema();
    await migrateSchema(pool, schema);
    await pool.query(`INSERT INTO "${schema}".schema_migrations (version, name, checksum) VALUES (999, 'from the future', 'x')`);

    const state = new PostgresStateAdapter({ pool, schema });
    const refusal = await state.migrate().catch((error: unknown) => error);
    expect(isAssemblyLineError(refusal, "AL_ERR_STATE_SCHEMA_NEWER")).toBe(true);
    expect(String((refusal as Error).message)).toContain(`"${schema}" is at state schema version 999`);
    expect(String((refusal as Error).message)).toContain(`up to ${LATEST_SCHEMA_VERSION}`);
    // Ordinary calls refuse too, instead of writing into a schema they do not understand.
    await expect(state.getRun("r1")).rejects.toMatchObject({ code: "AL_ERR_STATE_SCHEMA_NEWER" });
    await state.close();

    await expect(createPostgresState(postgresState({ pool, schema }))).rejects.toMatchObject({ code: "AL_ERR_STATE_SCHEMA_NEWER" });
  });

  it("refuses a schema whose applied migration differs from this release's", async () => {
    const schema = nextSchema();
    await migrateSchema(pool, schema);
    await pool.query(`UPDATE "${schema}".schema_migrations SET checksum = 'edited' WHERE version = 1`);
    await expect(migrateSchema(pool, schema)).rejects.toMatchObject({ code: "AL_ERR_STATE_MIGRATION" });
  });

  it("rolls a failed migration back entirely", async () => {
    const schema = nextSchema();
    const broken = { version: 1, name: "half broken", sql: (s: string) => `CREATE TABLE ${s}.partial (id int); SELECT * FROM ${s}.missing_table` };
    await expect(migrateSchema(pool, schema, [broken])).rejects.toMatchObject({ code: "AL_ERR_STATE_MIGRATION" });
    const { rows } = await pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    expect(rows).toHaveLength(0);
  });
});
