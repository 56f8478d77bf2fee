import { isAdapterDescriptor, isAssemblyLineError } from "@assemblyline-agents/core";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresStateAdapter, createPostgresState, neonPostgres, postgresState } from "../src/index.js";
import { MIGRATIONS } from "../src/schema/migrations.js";
import { TEST_DATABASE_URL, dropSchema, probeDatabase, randomSchema, testPool } from "./support/database.js";

describe("gateway helpers", () => {
  it("postgresState() describes a state slot filled by the postgres plugin, reading DATABASE_URL later", () => {
    const descriptor = postgresState({ schema: "tenant_a" });
    expect(isAdapterDescriptor(descriptor)).toBe(true);
    expect(descriptor).toMatchObject({ slot: "state", plugin: "postgres", options: { schema: "tenant_a", connectionStringEnv: ["DATABASE_URL"] } });
    // No secret is captured when gateway.ts is evaluated.
    expect(JSON.stringify(descriptor)).not.toContain("postgres://");
  });

  it("neonPostgres() reads DATABASE_URL, then Neon's POSTGRES_URL and NEON_DATABASE_URL", () => {
    expect(neonPostgres().options.connectionStringEnv).toEqual(["DATABASE_URL", "POSTGRES_URL", "NEON_DATABASE_URL"]);
    expect(neonPostgres({ connectionString: "postgres://x@h/db" })).toMatchObject({ plugin: "postgres", options: { connectionString: "postgres://x@h/db" } });
  });

  it("picks the first variable that is set", () => {
    const state = new PostgresStateAdapter({ ...neonPostgres().options, env: { POSTGRES_URL: "", NEON_DATABASE_URL: "postgres://neon@h/db" } });
    expect((state.pool as unknown as { options: { connectionString: string } }).options.connectionString).toBe("postgres://neon@h/db");
    return state.close();
  });

  it("refuses to start without a connection string, naming the variables it read", () => {
    let error: unknown;
    try {
      new PostgresStateAdapter({ ...neonPostgres().options, env: {} });
    } catch (caught) {
      error = caught;
    }
    expect(isAssemblyLineError(error, "AL_ERR_STATE_CONFIG")).toBe(true);
    expect((error as Error).message).toContain("$DATABASE_URL, $POSTGRES_URL, $NEON_DATABASE_URL are all unset");
  });

  it("refuses a schema name that is not a plain identifier", () => {
    expect(() => new PostgresStateAdapter({ connectionString: TEST_DATABASE_URL, schema: 'x"; DROP TABLE y; --' })).toThrow(/AL_ERR_STATE_CONFIG/);
  });

  it("refuses unknown and ill-typed options, naming them, instead of ignoring them", () => {
    const refused = (options: unknown) => {
      try {
        new PostgresStateAdapter(options as never);
      } catch (error) {
        expect(isAssemblyLineError(error, "AL_ERR_STATE_CONFIG"), String(error)).toBe(true);
        return (error as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(options)}`);
    };
    expect(refused({ connectionString: TEST_DATABASE_URL, maxConnection: 5, ssl: true })).toContain('unknown options "maxConnection", "ssl"');
    expect(refused({ connectionString: TEST_DATABASE_URL, preparedStatements: "false" })).toContain("preparedStatements must be a boolean, got string");
    expect(refused({ connectionString: TEST_DATABASE_URL, maxConnections: "4" })).toContain("maxConnections must be a number, got string");
    expect(refused({ connectionStringEnv: "DATABASE_URL", env: { DATABASE_URL: TEST_DATABASE_URL } })).toContain("connectionStringEnv must be an array");
    expect(refused({ connectionStringEnv: [], env: {} })).toContain("connectionStringEnv must list at least one");
    expect(refused({ ...postgresState().options, env: { DATABASE_URL: TEST_DATABASE_URL }, tableprefix: "x" })).toContain('unknown option "tableprefix"');
  });

  it("refuses a malformed connection string at once, without repeating it (it may hold a password)", () => {
    for (const [options, source] of [
      [{ connectionString: "postgres://app:s3cret@db.internal:54x2/app" }, "connectionString"],
      [{ connectionString: "app:s3cret@db.internal/app" }, "connectionString"],
      [{ ...postgresState().options, env: { DATABASE_URL: "postgres://app:s3cret@[db/app" } }, "$DATABASE_URL"],
      [{ ...postgresState().options, env: { DATABASE_URL: "mysql://app:s3cret@db/app" } }, "$DATABASE_URL"],
    ] as const) {
      let error: unknown;
      try {
        new PostgresStateAdapter(options);
      } catch (caught) {
        error = caught;
      }
      expect(isAssemblyLineError(error, "AL_ERR_STATE_CONFIG"), String(error)).toBe(true);
      expect((error as Error).message).toContain(`connection string in ${source}`);
      expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain("s3cret");
      expect(String((error as Error).stack)).not.toContain("s3cret");
    }
  });

  it("refuses a pool of one connection, which the liveness session would take for itself, naming the option", async () => {
    expect(() => new PostgresStateAdapter({ connectionString: TEST_DATABASE_URL, maxConnections: 1 })).toThrow(/maxConnections is 1: it needs at least 2 connections/);
    const pg = (await import("pg")).default;
    const single = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
    try {
      expect(() => new PostgresStateAdapter({ pool: single })).toThrow(/pool's max is 1/);
    } finally {
      await single.end();
    }
    const two = new PostgresStateAdapter({ connectionString: TEST_DATABASE_URL, maxConnections: 2 });
    await two.close();
  });
});

const probe = await probeDatabase("createPostgresState");

describe.skipIf(!probe.available)("createPostgresState", () => {
  const schema = randomSchema();
  const admin = testPool();
  afterAll(async () => {
    await dropSchema(admin, schema);
    await admin.end();
  });

  it("materializes a descriptor into a migrated adapter, with DATABASE_URL from the given env", async () => {
    const state = await createPostgresState(postgresState({ schema }), { env: { DATABASE_URL: TEST_DATABASE_URL } });
    try {
      const { rows } = await admin.query(`SELECT version FROM "${schema}".schema_migrations`);
      expect(rows).toHaveLength(MIGRATIONS.length);
      expect((await state.createRun({ id: "r1", agentId: "a", agentRevision: "1", modelSpec: "m", input: { message: "", metadata: {} } })).created).toBe(true);
    } finally {
      await state.close();
    }
  });

  it("reports a refused user or a missing database as a setting to fix, naming neither the schema nor the password", async () => {
    const url = new URL(TEST_DATABASE_URL);
    const noUser = new URL(url);
    noUser.username = `al_no_such_user_${Date.now()}`;
    noUser.password = "s3cret";
    const noDatabase = new URL(url);
    noDatabase.pathname = `/al_no_such_database_${Date.now()}`;
    for (const connectionString of [noUser.toString(), noDatabase.toString()]) {
      const error = await createPostgresState({ connectionString, schema }).then(() => undefined, (caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_STATE_CONFIG"), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/PostgreSQL refused the connection: (role|password|database)/);
      expect((error as Error).message).not.toContain("s3cret");
    }
  });

  it("fails at boot, not on the first run, when the database is unreachable", async () => {
    await expect(createPostgresState({ connectionString: "postgres://postgres@127.0.0.1:1/test", schema })).rejects.toMatchObject({
      code: "AL_ERR_STATE_UNAVAILABLE",
    });
  });
});
