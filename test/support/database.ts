import pg from "pg";

/**
 * Whether PostgreSQL answers. In CI a missing database fails the suite (a silent
 * skip would hide a broken service); elsewhere the suite skips with one line saying why.
 */
export async function databaseOrSkip(url: string, suite: string): Promise<{ available: boolean }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
    return { available: true };
  } catch (error) {
    const reason = `PostgreSQL at ${url.replace(/:[^:@/]+@/, ":***@")} is unreachable (${(error as Error).message})`;
    if (process.env.CI) throw new Error(`${suite}: ${reason}; CI requires it`);
    console.log(`skipping ${suite}: ${reason}; set DATABASE_URL to run it`);
    return { available: false };
  } finally {
    await client.end().catch(() => undefined);
  }
}
