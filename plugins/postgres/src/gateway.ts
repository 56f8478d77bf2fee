import { adapterDescriptor, isAdapterDescriptor, type AdapterDescriptor } from "@assemblyline-agents/core";
import { PostgresStateAdapter } from "./adapter.js";
import { NEON_ENV, POSTGRES_ENV, type PostgresStateOptions, type PostgresStateRuntimeOptions } from "./options.js";

/** The plugin id descriptors name; the kernel routes them to `createPostgresState`. */
export const POSTGRES_PLUGIN_ID = "postgres";

export type PostgresStateDescriptor = AdapterDescriptor<"state", PostgresStateOptions>;

/**
 * `state: postgresState()` in gateway.ts: PostgreSQL state, connecting with
 * `connectionString`, or `pool`, or else `$DATABASE_URL` (read when the host
 * materializes the descriptor, so the descriptor holds no secret).
 */
export function postgresState(options: PostgresStateOptions = {}): PostgresStateDescriptor {
  return adapterDescriptor("state", POSTGRES_PLUGIN_ID, { connectionStringEnv: [...POSTGRES_ENV], ...options });
}

/**
 * `state: neonPostgres()` in gateway.ts: PostgreSQL state on Neon. Without a
 * `connectionString` or `pool` it reads `$DATABASE_URL`, then Neon's
 * `$POSTGRES_URL`, then `$NEON_DATABASE_URL`. Neon URLs carry `sslmode=require`,
 * which the driver honours. It sets `livenessSession: false`, so that Neon's pooled
 * (PgBouncer, transaction mode) endpoint works: a dead replica's runs are then taken
 * when their leases expire. On a direct (unpooled) endpoint, pass
 * `livenessSession: true` to have them taken at once.
 */
export function neonPostgres(options: PostgresStateOptions = {}): PostgresStateDescriptor {
  return adapterDescriptor("state", POSTGRES_PLUGIN_ID, { connectionStringEnv: [...NEON_ENV], livenessSession: false, ...options });
}

/**
 * Materialize a descriptor (or plain options) into a migrated adapter: the host's
 * side of `postgresState()`/`neonPostgres()`. Fails at boot, not on the first run,
 * when the database is unreachable, unconfigured, or migrated by a newer release.
 */
export async function createPostgresState(
  options: PostgresStateDescriptor | PostgresStateOptions = {},
  context: Pick<PostgresStateRuntimeOptions, "env" | "logger"> = {},
): Promise<PostgresStateAdapter> {
  const resolved: PostgresStateOptions = isAdapterDescriptor(options) ? (options.options as PostgresStateOptions) : options;
  const adapter = new PostgresStateAdapter({ ...resolved, ...context });
  try {
    await adapter.migrate();
  } catch (error) {
    await adapter.close().catch(() => undefined);
    throw error;
  }
  return adapter;
}
