import { randomBytes } from "node:crypto";
import type pg from "pg";

/**
 * Proof that this adapter's process is alive, readable by every other replica:
 * one pooled connection, held for the adapter's life, holds a session-level
 * advisory lock on a random key. Leases this adapter takes record the key; when
 * the process dies its session ends, PostgreSQL drops the lock, and another
 * replica's `pg_try_advisory_xact_lock(key)` succeeds: the lease's holder is
 * provably gone and the run is taken at once instead of after the lease expires.
 * A live holder's lock always fails that test, so a live owner is never preempted.
 */
export class LivenessSession {
  private client: pg.PoolClient | undefined;
  private opening: Promise<string | null> | undefined;
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly warn: (message: string, error: unknown) => void,
  ) {}

  /** The key of the live session, or null while none could be established (leases then only expire). */
  key(): Promise<string | null> {
    if (this.closed) return Promise.resolve(null);
    this.opening ??= this.open().catch((error: unknown) => {
      this.opening = undefined;
      this.warn("postgres state: no liveness session; leases of a dead process will only expire", error);
      return null;
    });
    return this.opening;
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? (await this.opening?.catch(() => null), this.client);
    this.client = undefined;
    // Destroying the connection ends the session, which drops the advisory lock.
    client?.release(true);
  }

  private async open(): Promise<string> {
    const client = await this.pool.connect();
    // A random positive 63-bit key: unique across every replica of every schema sharing the database.
    const key = (randomBytes(8).readBigUInt64BE() >> 1n).toString();
    try {
      await client.query("SELECT pg_advisory_lock($1::bigint)", [key]);
    } catch (error) {
      client.release(true);
      throw error;
    }
    client.on("error", (error) => {
      // The session is gone, and with it the lock: new leases wait for a new session.
      // Already handed back by close(), or never taken: nothing to do.
      if (this.client !== client) return;
      this.client = undefined;
      this.opening = undefined;
      // Back to the pool as broken, or pool.end() would wait for it forever.
      client.release(true);
      this.warn("postgres state: the liveness session dropped; opening a new one", error);
    });
    if (this.closed) {
      client.release(true);
      throw new Error("adapter closed");
    }
    this.client = client;
    return key;
  }
}
