import { AssemblyLineError } from "@assemblyline-agents/core";
import { createHash } from "node:crypto";
import type { Pool, PoolClient } from "pg";
import { databaseError, isConnectionError } from "../errors.js";
import { LATEST_SCHEMA_VERSION, MIGRATIONS, type Migration } from "./migrations.js";

/** The advisory lock class of "migrating an Assembly Line schema" ("AL"); the schema name picks the key. */
const MIGRATION_LOCK_CLASS = 0x414c;

export interface MigrationResult {
  schema: string;
  /** The version found before migrating (0 for a fresh schema). */
  from: number;
  to: number;
  /** Versions this call applied; empty when another replica (or an earlier boot) already had. */
  applied: number[];
}

/** Quote an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Checksums are taken over the text with a placeholder schema, so they do not depend on where it is applied. */
function checksum(migration: Migration): string {
  return createHash("sha256").update(migration.sql('"$schema"')).digest("hex").slice(0, 32);
}

/**
 * Bring `schema` to the latest version in one transaction under a transaction-level
 * advisory lock: replicas booting at once queue on the lock, the first applies the
 * migrations, the others find nothing to do. A transaction-level lock (rather than
 * a session one) also works behind PgBouncer in transaction mode.
 */
export async function migrateSchema(pool: Pool, schema: string, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationResult> {
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  const s = quoteIdent(schema);
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw databaseError(error, `migrating state schema "${schema}"`, schema);
  }
  // A connection dropped mid-migration would otherwise surface as an unhandled 'error' event.
  const swallow = () => undefined;
  client.on("error", swallow);
  let failed: unknown;
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [MIGRATION_LOCK_CLASS, schema]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`,
    );
    const { rows } = await client.query<{ version: number; checksum: string }>(
      `SELECT version, checksum FROM ${s}.schema_migrations ORDER BY version`,
    );
    const from = rows.reduce((max, row) => Math.max(max, row.version), 0);
    if (from > latest) {
      throw new AssemblyLineError(
        "AL_ERR_STATE_SCHEMA_NEWER",
        `PostgreSQL schema "${schema}" is at state schema version ${from}, but this @assemblyline-agents/postgres only knows versions up to ${latest}`,
        {
          fix: "A newer release has migrated this database. Upgrade @assemblyline-agents/postgres on this replica (never downgrade a migrated database), or point it at another schema.",
          details: { schema, databaseVersion: from, codeVersion: latest },
        },
      );
    }
    const known = new Map(migrations.map((m) => [m.version, m]));
    for (const row of rows) {
      const migration = known.get(row.version);
      if (migration && checksum(migration) !== row.checksum) {
        throw new AssemblyLineError(
          "AL_ERR_STATE_MIGRATION",
          `state schema migration ${row.version} ("${migration.name}") applied to PostgreSQL schema "${schema}" differs from the one in this release`,
          {
            fix: "The schema was migrated by a modified build. Restore a matching release, or migrate a fresh schema and copy the data over.",
            details: { schema, version: row.version },
          },
        );
      }
    }
    const applied: number[] = [];
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (migration.version <= from) continue;
      try {
        await client.query(migration.sql(s));
      } catch (error) {
        if (isConnectionError(error)) throw error;
        throw new AssemblyLineError(
          "AL_ERR_STATE_MIGRATION",
          `state schema migration ${migration.version} ("${migration.name}") failed on PostgreSQL schema "${schema}": ${error instanceof Error ? error.message : String(error)}`,
          {
            fix: "Nothing was applied (migrations run in one transaction). Check the database user's privileges on the schema and the database logs, then restart.",
            cause: error,
            details: { schema, version: migration.version },
          },
        );
      }
      await client.query(`INSERT INTO ${s}.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`, [
        migration.version,
        migration.name,
        checksum(migration),
      ]);
      applied.push(migration.version);
    }
    await client.query("COMMIT");
    return { schema, from, to: Math.max(from, latest), applied };
  } catch (error) {
    failed = error;
    await client.query("ROLLBACK").catch(swallow);
    throw error instanceof AssemblyLineError ? error : databaseError(error, `migrating state schema "${schema}"`, schema);
  } finally {
    client.off("error", swallow);
    // The pool drops a client whose connection broke; a refused boot leaves it healthy.
    client.release(failed instanceof AssemblyLineError ? undefined : (failed as Error | undefined));
  }
}

export { LATEST_SCHEMA_VERSION };
