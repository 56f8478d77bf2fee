export { PostgresStateAdapter } from "./adapter.js";
export { POSTGRES_PLUGIN_ID, createPostgresState, neonPostgres, postgresState, type PostgresStateDescriptor } from "./gateway.js";
export {
  DEFAULT_SCHEMA,
  NEON_ENV,
  POSTGRES_ENV,
  type PostgresStateOptions,
  type PostgresStateRuntimeOptions,
} from "./options.js";
export { LATEST_SCHEMA_VERSION, MIGRATIONS, type Migration } from "./schema/migrations.js";
export { migrateSchema, type MigrationResult } from "./schema/migrate.js";
export { plugin } from "./plugin.js";
