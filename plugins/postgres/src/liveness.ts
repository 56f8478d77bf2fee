import { randomBytes } from "node:crypto";
import pRetry from "p-retry";
import type pg from "pg";

/** First wait before reopening a liveness session that could not be reopened, doubled after each failure. */
export const REOPEN_FIRST_DELAY_MS = 100;
/** The longest wait between two attempts to reopen the liveness session while the database is unreachable. */
export const REOPEN_MAX_DELAY_MS = 5_000;

/**
 * Proof that this adapter's process is alive, readable by every other replica:
 * one pooled connection, held for the adapter's life, holds a session-level
 * advisory lock on a key chosen once per adapter. Leases this adapter takes or
 * renews record the key; when the process dies its session ends, PostgreSQL drops
 * the lock, and another replica's `pg_try_advisory_xact_lock(key)` succeeds: the
 * lease's holder is provably gone and the run is taken at once instead of after
 * the lease expires. A live holder's lock always fails that test.
 *
 * When the connection drops while the process lives (an idle timeout, a
 * `pg_terminate_backend`, a network blip), the session is reopened at once on the
 * SAME key, retried with a capped backoff while the database is unreachable, so the
 * leases taken under the old session are protected again. `pg_advisory_lock` waits
 * while the old backend still holds the key, and PostgreSQL hands the lock to the
 * waiter as the old backend ends, so other replicas never see it free. The key is
 * free only when the old backend ended before the new session asked for it (the
 * server ended the session, then the client noticed): from that end until the new
 * session's grant, a claim by another replica takes this process's runs (see the
 * README, "the reconnect window").
 */
export class LivenessSession {
  /** A random positive 63-bit key: unique across every replica of every schema sharing the database. */
  private readonly lockKey = (randomBytes(8).readBigUInt64BE() >> 1n).toString();
  private client: pg.PoolClient | undefined;
  /** A new session still waiting for the key (behind the old backend that holds it, until that one ends). */
  private waiting: pg.PoolClient | undefined;
  private opening: Promise<string | null> | undefined;
  /** The key has been locked once: leases may name it, so every later session must lock it again. */
  private established = false;
  /** Ends the reopen attempts' waits when the adapter closes. */
  private readonly closing = new AbortController();
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly warn: (message: string, error: unknown) => void,
  ) {}

  /**
   * The key leases record. Waits for the first session only; once one was granted the
   * key is returned at once, also while a dropped session is being reopened on it.
   * Null while none could be established (leases then only expire).
   */
  key(): Promise<string | null> {
    if (this.closed) return Promise.resolve(null);
    if (this.established) return Promise.resolve(this.lockKey);
    this.opening ??= this.open().catch((error: unknown) => {
      this.opening = undefined;
      this.warn("postgres state: no liveness session; leases of a dead process will only expire", error);
      return null;
    });
    return this.opening;
  }

  /** The key, without waiting: null until a first session was granted (a renewal must not wait for a connection). */
  currentKey(): string | null {
    return this.established && !this.closed ? this.lockKey : null;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    // A session still waiting for the key is ended now rather than awaited: its wait can last as long as the old backend.
    if (this.waiting) this.discard(this.waiting);
    const client = this.client ?? (await this.opening?.catch(() => null), this.client);
    this.client = undefined;
    // Destroying the connection ends the session, which drops the advisory lock.
    if (client) this.discard(client);
  }

  private async open(): Promise<string | null> {
    const client = await this.pool.connect();
    if (this.closed) {
      this.discard(client);
      return null;
    }
    client.on("error", (error) => this.dropped(client, error));
    this.waiting = client;
    try {
      await client.query("SELECT pg_advisory_lock($1::bigint)", [this.lockKey]);
    } catch (error) {
      this.discard(client);
      throw error;
    } finally {
      this.waiting = undefined;
    }
    if (this.closed) {
      this.discard(client);
      return null;
    }
    this.client = client;
    this.established = true;
    return this.lockKey;
  }

  /** The session is gone, and with it the lock: take the same key again before another replica reads it as free. */
  private dropped(client: pg.PoolClient, error: unknown): void {
    // Already handed back by close(), still opening (its query fails too), or never taken: nothing to do.
    if (this.client !== client) return;
    this.client = undefined;
    this.discard(client);
    this.warn("postgres state: the liveness session dropped; reopening it on the same key", error);
    this.reopen();
  }

  /** Lock the key on a new session, attempt after attempt with a capped, doubling wait, until one is granted or the adapter closes. */
  private reopen(): void {
    if (this.closed) return;
    this.opening = pRetry(() => this.open(), {
      retries: Number.POSITIVE_INFINITY,
      factor: 2,
      minTimeout: REOPEN_FIRST_DELAY_MS,
      maxTimeout: REOPEN_MAX_DELAY_MS,
      // Retrying must not keep an otherwise finished process alive.
      unref: true,
      signal: this.closing.signal,
      onFailedAttempt: ({ error, attemptNumber }) => {
        if (attemptNumber === 1 && !this.closed) this.warn("postgres state: the liveness session could not be reopened; retrying until it can", error);
      },
      // Only close() ends the attempts: nothing is left to protect then.
    }).catch(() => null);
  }

  /** Back to the pool as broken (pool.end() would wait for it forever otherwise); its session ends with it. */
  private discard(client: pg.PoolClient): void {
    try {
      client.release(true);
    } catch {
      // Released already (a connection that failed during its lock query reports twice).
    }
  }
}
