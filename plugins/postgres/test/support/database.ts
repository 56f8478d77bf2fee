import { randomBytes } from "node:crypto";
import pg from "pg";

/** The database the suites run against: $DATABASE_URL, else the local trust-auth server. */
export const TEST_DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export type DatabaseProbe = { available: true } | { available: false; reason: string };

/**
 * Whether the test database answers. Unreachable fails the suite on CI (a silent
 * skip there would hide a broken service) and skips it locally, with one line saying why.
 */
export async function probeDatabase(suite: string): Promise<DatabaseProbe> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 3_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
    return { available: true };
  } catch (error) {
    const reason = `PostgreSQL at ${redact(TEST_DATABASE_URL)} is unreachable (${error instanceof Error ? error.message : String(error)})`;
    if (process.env.CI) throw new Error(`${suite}: ${reason}; CI requires it`);
    console.log(`skipping ${suite}: ${reason}; set DATABASE_URL to run it`);
    return { available: false, reason };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A fresh schema name per file (and per kit test), so suites never see each other's rows. */
export function randomSchema(prefix = "al_test"): string {
  return `${prefix}_${randomBytes(6).toString("hex")}`;
}

export function testPool(options: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, ...options });
  // Terminated backends surface here once idle; the tests that cause them check the outcome themselves.
  pool.on("error", () => undefined);
  return pool;
}

export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** The test URL with an application_name, so a test can find (and kill) exactly its own backends. */
export function urlWithApplicationName(name: string, url = TEST_DATABASE_URL): string {
  const parsed = new URL(url);
  parsed.searchParams.set("application_name", name);
  return parsed.toString();
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}
