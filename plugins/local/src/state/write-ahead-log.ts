import { constants } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { crc32 } from "node:zlib";

/** How long a lazily appended record waits for another batch to join before it starts one. */
const LAZY_SYNC_MS = 50;

/**
 * Where the platform has O_DSYNC (Linux, macOS), the log is opened with it: a write()
 * returns once its data and the file size are on disk, as write() then fdatasync()
 * would, but a batch is then one call the thread pool makes whole, instead of two the
 * event loop relays, and that relay waited behind every run's work in between.
 */
const SYNCED_WRITES = constants.O_DSYNC !== undefined;
const LOG_FLAGS = SYNCED_WRITES ? constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC : "a+";

/**
 * An append-only file of checksummed records, one per line:
 *
 *   <crc32 of the JSON, 8 hex digits> <JSON>\n
 *
 * Group commit: records appended while a batch is being synced wait for it to end,
 * then go to disk together in one synced write (see SYNCED_WRITES; elsewhere one
 * write() and one fdatasync). A record's `append` resolves only once the sync that
 * covers it has returned. A record appended with `appendLazily` starts no sync of
 * its own: it joins the next batch (another append's, a `syncSoon`, or one
 * LAZY_SYNC_MS later).
 *
 * A crash mid-write leaves at most one torn record at the end (no newline, or a
 * checksum that does not match); `read` stops at the first such record and
 * `openForAppend` cuts the file there, so a record is either wholly in the log or
 * not at all. A failed write or fdatasync fails its batch and every later append:
 * what the disk holds is then unknown, so the log must be reopened (replayed).
 */
export class WriteAheadLog {
  /** Records waiting for the next batch, in append order. */
  private pending: Array<{ line: Buffer; resolve: () => void; reject: (error: Error) => void }> = [];
  private pendingBytes = 0;
  private flushing: Promise<void> | undefined;
  private failure: Error | undefined;
  private lazySync: NodeJS.Timeout | undefined;

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    /** Bytes on disk and synced. */
    private size: number,
  ) {}

  /** Parse every intact record; `validBytes` is where the intact prefix ends. */
  static async read(path: string): Promise<{ records: unknown[]; validBytes: number; totalBytes: number }> {
    let bytes: Buffer;
    try {
      const handle = await open(path, "r");
      try {
        bytes = await handle.readFile();
      } finally {
        await handle.close();
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { records: [], validBytes: 0, totalBytes: 0 };
      throw error;
    }
    const records: unknown[] = [];
    let offset = 0;
    while (offset < bytes.length) {
      const end = bytes.indexOf(0x0a, offset);
      if (end < 0) break;
      const record = decodeLine(bytes.subarray(offset, end));
      if (record === undefined) break;
      records.push(record);
      offset = end + 1;
    }
    return { records, validBytes: offset, totalBytes: bytes.length };
  }

  /** Open for appending after cutting anything past `validBytes` (a torn tail). */
  static async openForAppend(path: string, validBytes: number): Promise<WriteAheadLog> {
    const handle = await open(path, LOG_FLAGS);
    try {
      const { size } = await handle.stat();
      if (size > validBytes) {
        await handle.truncate(validBytes);
        await handle.sync();
      }
      return new WriteAheadLog(path, handle, validBytes);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Size of the log once every appended record is on disk. */
  get bytes(): number {
    return this.size + this.pendingBytes;
  }

  /** The error that stopped this log, if a write or fdatasync failed. */
  get failed(): Error | undefined {
    return this.failure;
  }

  /** Durably append one record, given as its JSON text; resolves only once it is on disk. */
  append(json: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const line = encodeLine(json);
    this.pendingBytes += line.length;
    const written = new Promise<void>((resolve, reject) => this.pending.push({ line, resolve, reject }));
    this.flushing ??= this.flush();
    return written;
  }

  /**
   * Append one record without starting an fdatasync for it: it goes to disk with
   * the next batch. Resolves once it is on disk, like `append`; for records whose
   * caller need not wait for that.
   */
  appendLazily(json: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const line = encodeLine(json);
    this.pendingBytes += line.length;
    const written = new Promise<void>((resolve, reject) => this.pending.push({ line, resolve, reject }));
    this.lazySync ??= setTimeout(() => {
      this.lazySync = undefined;
      this.syncSoon();
    }, LAZY_SYNC_MS);
    return written;
  }

  /** Start writing the records that wait, if no batch is being written (a batch that is will take them next). */
  syncSoon(): void {
    if (this.pending.length > 0) this.flushing ??= this.flush();
  }

  /** Write and sync batches until none is waiting: each batch is what arrived during the last sync. */
  private async flush(): Promise<void> {
    clearTimeout(this.lazySync);
    this.lazySync = undefined;
    while (this.pending.length > 0 && !this.failure) {
      const batch = this.pending;
      this.pending = [];
      const bytes = batch.length === 1 ? batch[0]!.line : Buffer.concat(batch.map((record) => record.line));
      try {
        let written = 0;
        while (written < bytes.length) {
          const { bytesWritten } = await this.handle.write(bytes, written, bytes.length - written);
          written += bytesWritten;
        }
        if (!SYNCED_WRITES) await this.handle.datasync();
        this.size += bytes.length;
        this.pendingBytes -= bytes.length;
        for (const record of batch) record.resolve();
      } catch (error) {
        // Cut a partial write so a reopen does not find garbage before the torn-tail check.
        await this.handle.truncate(this.size).catch(() => undefined);
        this.failure = error instanceof Error ? error : new Error(String(error));
        for (const record of [...batch, ...this.pending]) record.reject(this.failure);
        this.pending = [];
      }
    }
    this.flushing = undefined;
  }

  /** Wait for every appended record to be synced (or failed), then close the file. */
  async close(): Promise<void> {
    this.syncSoon();
    await this.flushing;
    await this.handle.close();
  }
}

function encodeLine(text: string): Buffer {
  // crc32 of a string is of its UTF-8 bytes, as decodeLine checks it: one buffer, one copy of the record.
  return Buffer.from(`${crc32(text).toString(16).padStart(8, "0")} ${text}\n`, "utf8");
}

function decodeLine(line: Buffer): unknown {
  if (line.length < 10 || line[8] !== 0x20) return undefined;
  const expected = Number.parseInt(line.subarray(0, 8).toString("ascii"), 16);
  const json = line.subarray(9);
  if (!Number.isInteger(expected) || crc32(json) !== expected) return undefined;
  try {
    return JSON.parse(json.toString("utf8"));
  } catch {
    return undefined;
  }
}
