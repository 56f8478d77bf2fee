import { AssemblyLineError, type RuntimeLogger } from "@assemblyline-agents/core";
import type { Pool } from "pg";

/** The schema the tables live in when the options name none. */
export const DEFAULT_SCHEMA = "assembly_line";

/** What `postgresState()` reads when given no connection string or pool. */
export const POSTGRES_ENV = ["DATABASE_URL"] as const;
/**
 * What `neonPostgres()` reads, in order: our own `DATABASE_URL`, then the names
 * Neon's integrations set (`POSTGRES_URL` from the Vercel integration,
 * `NEON_DATABASE_URL` from others).
 */
export const NEON_ENV = ["DATABASE_URL", "POSTGRES_URL", "NEON_DATABASE_URL"] as const;

export interface PostgresStateOptions {
  /** A `postgres://` URL. Ignored when `pool` is given. */
  connectionString?: string;
  /** Use this pool instead of opening one. The adapter never ends a pool it was given. */
  pool?: Pool;
  /** The schema holding the tables; default "assembly_line". Created by the first migration. */
  schema?: string;
  /**
   * Environment variables tried in order when neither `connectionString` nor `pool`
   * is given; default `["DATABASE_URL"]`. Read when the adapter is created, not when
   * the gateway descriptor is, so `gateway.ts` never captures a secret.
   */
  connectionStringEnv?: readonly string[];
  /**
   * Connections in the pool the adapter opens (pg's default is 10); at least 2:
   * one stays open for the adapter's liveness session (see the README).
   */
  maxConnections?: number;
  /**
   * Send every statement as a named prepared statement, parsed and planned once per
   * connection; default true. Set false behind a transaction-mode pooler that does
   * not support prepared statements (PgBouncer before 1.21, or without `max_prepared_statements`).
   */
  preparedStatements?: boolean;
  /**
   * Hold a liveness session, a session-level advisory lock on one pooled connection, so that a
   * dead replica's runs are taken at once instead of when their leases expire; default true.
   * Set false behind a transaction-mode pooler (PgBouncer's `pool_mode = transaction`, Neon's
   * pooled endpoint): its server connections take turns serving every client, so a live
   * holder's lock can look free and another replica would take its runs. Leases then only
   * expire, and no connection is kept for the session. `neonPostgres()` sets false.
   */
  livenessSession?: boolean;
}

export interface PostgresStateRuntimeOptions extends PostgresStateOptions {
  /** Where environment variables are read from; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Receives errors of idle connections in a pool the adapter owns. */
  logger?: RuntimeLogger;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Every option the adapter reads; any other key is a typo the adapter would otherwise ignore. */
const OPTION_TYPES: Record<keyof PostgresStateRuntimeOptions, string> = {
  connectionString: "string",
  pool: "object",
  schema: "string",
  connectionStringEnv: "array",
  maxConnections: "number",
  preparedStatements: "boolean",
  livenessSession: "boolean",
  env: "object",
  logger: "object",
};

/**
 * Refuse options the adapter would otherwise ignore or misread (`maxConnection`,
 * `preparedStatements: "false"`), naming them. The plugin loader checks the same
 * against config.schema.json; this covers `new PostgresStateAdapter()` and
 * `createPostgresState()` called directly.
 */
export function checkOptions(options: unknown): void {
  const fail = (problem: string, fix: string, details: Record<string, unknown>): never => {
    throw new AssemblyLineError("AL_ERR_STATE_CONFIG", `PostgreSQL state options: ${problem}`, { fix, details });
  };
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    fail(`expected an object, got ${options === null ? "null" : Array.isArray(options) ? "an array" : typeof options}`, "Pass an options object, e.g. { schema: \"assembly_line\" }, or nothing.", {});
  }
  const given = options as Record<string, unknown>;
  const known = Object.keys(OPTION_TYPES);
  const unknown = Object.keys(given).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    fail(`unknown option${unknown.length === 1 ? "" : "s"} ${unknown.map((key) => JSON.stringify(key)).join(", ")}`, `The options are ${known.join(", ")}.`, { unknown });
  }
  for (const [key, expected] of Object.entries(OPTION_TYPES)) {
    const value = given[key];
    if (value === undefined) continue;
    const actual = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
    if (actual !== expected) fail(`${key} must be ${expected === "array" ? "an array" : `a${expected === "object" ? "n" : ""} ${expected}`}, got ${actual}`, `Pass ${key} as ${expected === "array" ? "an array of variable names" : `a${expected === "object" ? "n" : ""} ${expected}`}, or leave it out.`, { option: key });
  }
  const names = given.connectionStringEnv as unknown[] | undefined;
  if (names !== undefined && (names.length === 0 || names.some((name) => typeof name !== "string" || name === ""))) {
    fail("connectionStringEnv must list at least one environment variable name, each a non-empty string", 'Pass e.g. ["DATABASE_URL"], or leave it out.', { option: "connectionStringEnv" });
  }
}

/**
 * Refuse a connection string the driver would misread, without repeating it (it may
 * hold a password). pg reads anything that is not a URL as a path under
 * "postgres://base", and fails a malformed URL only at connect time, as a query error.
 */
function checkConnectionString(value: string, source: string): string {
  if (value.startsWith("/")) return value;
  let protocol: string | undefined;
  try {
    protocol = new URL(value).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol === "postgres:" || protocol === "postgresql:" || protocol === "socket:") return value;
  throw new AssemblyLineError("AL_ERR_STATE_CONFIG", `the PostgreSQL connection string in ${source} is not a ${protocol === undefined ? "valid URL" : "postgres:// URL"}`, {
    fix: "Use postgres://user:password@host:port/database (percent-encode special characters in the user and password; a port is a number).",
    details: { source },
  });
}

/** The liveness session keeps one pooled connection for itself: a pool of one would leave none for statements. Without it any size will do. */
export function checkPoolSize(maxConnections: number | undefined, source: "maxConnections" | "pool"): void {
  if (maxConnections === undefined || (Number.isInteger(maxConnections) && maxConnections >= 2)) return;
  throw new AssemblyLineError("AL_ERR_STATE_CONFIG", `PostgreSQL state ${source === "pool" ? "pool's max" : "maxConnections"} is ${String(maxConnections)}: it needs at least 2 connections`, {
    fix: `One connection holds the adapter's liveness session for as long as it is open; ${source === "pool" ? "create the pg.Pool with max >= 2" : "set maxConnections to 2 or more, or leave it out (10)"}.`,
    details: { [source === "pool" ? "poolMax" : "maxConnections"]: maxConnections },
  });
}

export function resolveSchema(schema: string | undefined): string {
  const name = schema ?? DEFAULT_SCHEMA;
  if (typeof name !== "string" || !SCHEMA_NAME.test(name)) {
    throw new AssemblyLineError("AL_ERR_STATE_CONFIG", `PostgreSQL state schema name ${JSON.stringify(name)} is not a plain identifier`, {
      fix: 'Use letters, digits and underscores, starting with a letter or underscore, at most 63 characters (e.g. "assembly_line").',
      details: { schema: name },
    });
  }
  return name;
}

/** The connection string to open a pool with, from the options or the environment. */
export function resolveConnectionString(options: PostgresStateRuntimeOptions): string {
  if (options.connectionString !== undefined) {
    if (typeof options.connectionString === "string" && options.connectionString.trim() !== "") return checkConnectionString(options.connectionString, "connectionString");
    throw new AssemblyLineError("AL_ERR_STATE_CONFIG", "postgresState({ connectionString }) is empty", {
      fix: "Pass a postgres:// URL, or leave connectionString out to read DATABASE_URL.",
    });
  }
  const names = options.connectionStringEnv ?? POSTGRES_ENV;
  const env = options.env ?? process.env;
  for (const name of names) {
    const value = env[name];
    if (typeof value === "string" && value.trim() !== "") return checkConnectionString(value, `$${name}`);
  }
  throw new AssemblyLineError(
    "AL_ERR_STATE_CONFIG",
    `the PostgreSQL state adapter has no connection string: ${names.map((n) => `$${n}`).join(", ")} ${names.length === 1 ? "is" : "are all"} unset`,
    {
      fix: `Set ${names[0] ?? "DATABASE_URL"} to a postgres:// URL, or pass { connectionString } or { pool } to the adapter.`,
      details: { env: [...names] },
    },
  );
}
