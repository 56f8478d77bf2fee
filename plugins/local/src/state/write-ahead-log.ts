import { AssemblyLineError } from "@assemblyline-agents/core";
import { constants as bufferConstants } from "node:buffer";
import { constants, fdatasyncSync, ftruncateSync, writeSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { crc32 } from "node:zlib";

/** How long a lazily appended record waits for another batch to join before it starts one. */
const LAZY_SYNC_MS = 50;
/**
 * When the batches written on the event loop take longer than this on average, the log's writes move to
 * the thread pool: a slow disk must not stall every other task of the process for its syncs.
 */
const INLINE_WRITE_LIMIT_MS = 2;
/**
 * The weight of the newest inline batch in that average: one latency spike of a disk that is fast otherwise
 * (a few ms here and there) does not move the writes, a disk that is slow moves them within a batch or two.
 */
const INLINE_AVERAGE_WEIGHT = 1 / 8;
/** How long the log writes through the thread pool, once the inline batches were slow, before it tries inline again. */
const INLINE_RETRY_MS = 1_000;

/**
 * Where the platform has O_DSYNC (Linux, macOS), the log is opened with it: a write()
 * returns once its data and the file size are on disk, as write() then fdatasync()
 * would, but a batch is then one call the thread pool makes whole, instead of two the
 * event loop relays, and that relay waited behind every run's work in between.
 */
const SYNCED_WRITES = constants.O_DSYNC !== undefined;
/**
 * With synced writes, the log writes each batch at its end into space already filled with
 * zeros ahead of it, not past the end of the file: a synced write that grows the file must
 * also commit the file's new size (a journal commit of the file system), one into space the
 * file has must not (on the development machine, 0.15-0.18 ms against 0.29-0.48 ms per
 * synced write of 5-50 KB). Elsewhere the log appends, as before.
 */
const FILLS_AHEAD = SYNCED_WRITES;
const LOG_FLAGS = SYNCED_WRITES ? constants.O_RDWR | constants.O_CREAT | constants.O_DSYNC : "a+";
/** The first fill ahead of a log's end; each next one doubles, up to FILL_MAX_BYTES: a small folder stays small. */
const FILL_MIN_BYTES = 64 * 1024;
const FILL_MAX_BYTES = 4 * 1024 * 1024;
/** Zeros written per call of a fill. */
const FILL_CHUNK_BYTES = 64 * 1024;
/**
 * The first record of each synced write has its JSON text start with a space (checksummed with it; JSON
 * never starts so otherwise), so a reader of any version takes the line as the record it is. Logs
 * written before the mark have none, and are read as before it.
 */
const WRITE_START_MARK = 0x20; // " "
/** How much of a log is read at a time when its folder is opened (see `read`). */
const READ_CHUNK_BYTES = 4 * 1024 * 1024;

/** A record waiting for its batch: its line, and the settling of its append. */
interface PendingRecord {
  line: Buffer;
  resolve: () => void;
  reject: (error: Error) => void;
}

/**
 * What `read` found: where the intact records end, the data ends, and, past damage, where a record
 * starts that shows the damage is no torn write (see `read`).
 */
export interface LogReadEnds {
  validBytes: number;
  totalBytes: number;
  laterWriteAt: number | undefined;
}

/** Turns a record's JSON bytes (its checksum matched) into the record; throws if it cannot. */
export type RecordDecoder = (json: Buffer) => unknown;

/**
 * A line whose checksum matches, so it holds what was written, that cannot be decoded: too long for one
 * string, or no JSON. Never taken for a torn write: `read` refuses the log with it, cutting nothing.
 */
export class UndecodableRecordError extends Error {
  constructor(
    /** Where the record's line starts in the file. */
    readonly at: number,
    /** The line's length, newline excluded. */
    readonly bytes: number,
    /** Whether the line is more bytes than Node.js decodes into one string. */
    readonly tooLong: boolean,
    cause: unknown,
  ) {
    const reason = tooLong
      ? `its ${bytes} bytes are more than the ${bufferConstants.MAX_STRING_LENGTH} that Node.js ${process.version} decodes into one string`
      : `its checksum matches, but it holds no record (${cause instanceof Error ? cause.message : String(cause)})`;
    super(`the record at byte ${at} cannot be decoded: ${reason}`, { cause });
    this.name = "UndecodableRecordError";
  }
}

/** Asked before each write to the log's file: an error if nothing may be written to it (any more). */
export type WritableCheck = () => Error | undefined;

/** Records taken together for one synced write, and their bytes. */
interface Batch {
  records: PendingRecord[];
  bytes: Buffer;
}

/**
 * An append-only file of checksummed records, one per line:
 *
 *   <crc32 of the JSON, 8 hex digits> <JSON>\n
 *
 * Group commit: the records appended in one turn of the event loop go to disk together
 * in one synced write (see SYNCED_WRITES; elsewhere one write() and one fdatasync),
 * made at the end of that turn (setImmediate) on the event loop itself: on a disk that
 * syncs in a fraction of a millisecond, handing the write to the thread pool and
 * waking up for its completion cost more than the write. When the inline batches take
 * longer than INLINE_WRITE_LIMIT_MS on average, batches go through the thread pool
 * instead for INLINE_RETRY_MS (records appended while one is being synced wait for it,
 * then go together, see nextPooledBatch), so a slow disk holds the event loop for a
 * batch or two a second.
 * A record's `append` resolves only once the sync that covers it has returned. A
 * record appended with `appendLazily` starts no sync of its own: it joins the next
 * batch (another append's, a `syncSoon`, or one LAZY_SYNC_MS later).
 *
 * With FILLS_AHEAD the records are followed by zeros written ahead of them (a fill,
 * through the thread pool, while batches go on before it; a batch that would reach
 * the zeros still being written waits for them), and `close` cuts them off again.
 *
 * A crash mid-write leaves at most one torn record at the end (no newline, or a
 * checksum that does not match), and maybe zeros after it; `read` stops at the first
 * such record and `openForAppend` cuts the file there, so a record is either wholly in
 * the log or not at all. A line whose checksum matches is never taken for a torn one: one
 * that cannot be decoded fails the read (UndecodableRecordError). A failed write or
 * fdatasync fails its batch and every later append: what the disk holds is then unknown,
 * so the log must be closed, cut at `syncedBytes`, and reopened (replayed).
 *
 * Only the last synced write can be torn: the next starts once it returned. So the first
 * record of each synced write is marked (WRITE_START_MARK), and a damaged record followed by an
 * intact marked one is no torn write but damage to records already synced, which `read`
 * reports (`laterWriteAt`) for the caller to refuse the log rather than cut those records off.
 * So is a damaged record followed by any intact one in a log written before the marks, where
 * nothing tells a torn write's own records from a later write's, and a damaged line that holds
 * an intact record whole at its end: its newline was damaged, and no torn write does that.
 *
 * `checkWritable` is asked right before each batch, fill and cut is written (once per batch,
 * not per record): an error it returns fails that batch, and the log, as a failed write
 * would, with nothing written (the file is another process's now: see FolderLock.stillHeld).
 */
export class WriteAheadLog {
  /** Records waiting for the next batch, in append order. */
  private pending: PendingRecord[] = [];
  private pendingBytes = 0;
  private flushing: Promise<void> | undefined;
  private failure: Error | undefined;
  private lazySync: NodeJS.Timeout | undefined;
  /** Until when batches go through the thread pool, after the inline batches were slow (0: inline). */
  private pooledUntil = 0;
  /** The inline batches' average time (exponentially weighted), in ms. */
  private inlineAverageMs = 0;
  /** While the pool loop waits for its next batch to fill: how many records appended with `append` start it, and how. */
  private batchWanted: { records: number; take: () => void } | undefined;
  /** How many of the waiting records were appended with `append` (not lazily). */
  private eagerPending = 0;
  /** Whether `syncSoon` asked for the waiting records, lazy ones included, since the last batch was taken. */
  private urgent = false;
  /** Where the file's written bytes end, records and the zeros filled ahead of them (FILLS_AHEAD). */
  private filledTo: number;
  /** The fill being written, from `from` on: no batch may reach past `from` until it is done. */
  private filling: { from: number; done: Promise<void> } | undefined;
  private nextFillBytes = FILL_MIN_BYTES;
  private closed: Promise<void> | undefined;

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    /** Bytes on disk and synced. */
    private size: number,
    private readonly checkWritable: WritableCheck,
  ) {
    this.filledTo = size;
  }

  /**
   * Hand every intact record to `onRecord`, in order; `validBytes` is where the intact prefix ends,
   * `totalBytes` where the file's last byte that is not zero does: the zeros filled ahead of the
   * records are no torn record. `laterWriteAt`, past a damaged record, is where a record starts that
   * shows the damage is no torn write (see the class): an intact record that began a later synced
   * write, any intact record where the log has no marks, or one held whole at a damaged line's end.
   * A record whose checksum matches but that cannot be decoded fails the read with
   * AL_ERR_STATE_ROW_INVALID. The file is read `chunkBytes` at a time, never whole: a log can outgrow
   * the 2 GiB that Node.js reads into one Buffer, and a folder that could not be read back would
   * lose everything in it.
   */
  static async read(path: string, onRecord: (record: unknown) => void, chunkBytes = READ_CHUNK_BYTES, decode: RecordDecoder = decodeJson): Promise<LogReadEnds> {
    let handle: FileHandle;
    try {
      handle = await open(path, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { validBytes: 0, totalBytes: 0, laterWriteAt: undefined };
      throw error;
    }
    try {
      return await WriteAheadLog.readFrom(handle, onRecord, chunkBytes, decode);
    } catch (error) {
      if (error instanceof UndecodableRecordError) throw undecodableLogError(path, error);
      throw error;
    } finally {
      await handle.close();
    }
  }

  /**
   * `read` through a handle the caller opened (and closes), from the file's first byte; a record that
   * cannot be decoded throws UndecodableRecordError, for the caller to name the file.
   */
  static async readFrom(handle: FileHandle, onRecord: (record: unknown) => void, chunkBytes = READ_CHUNK_BYTES, decode: RecordDecoder = decodeJson): Promise<LogReadEnds> {
    const chunk = Buffer.allocUnsafe(chunkBytes);
    const zeros = Buffer.alloc(chunkBytes);
    /** The line being read, up to the chunk it ends in: copies, as the chunk is read into again. */
    let partial: Buffer[] = [];
    /** Whether the line being read holds a zero byte: no record does (zeros are a fill ahead, or a torn write). */
    let lineHasZero = false;
    let lineStart = 0;
    let validBytes = 0;
    let endOfNonZero = 0;
    let intact = true;
    /** Whether an intact record before any damage began a synced write: the log has marks. */
    let marked = false;
    /** Past damage: whether intact records without the mark may be the damaged write's own (a torn write). */
    let sameWriteMayFollow = false;
    let laterWriteAt: number | undefined;
    for (let position = 0; laterWriteAt === undefined; ) {
      const { bytesRead } = await handle.read(chunk, 0, chunkBytes, position);
      if (bytesRead === 0) break;
      const bytes = chunk.subarray(0, bytesRead);
      // Compared whole first: a stretch of zeros filled ahead is megabytes long, and holds no line.
      if (bytes.equals(zeros.subarray(0, bytesRead))) {
        lineHasZero = true;
        partial = [];
        position += bytesRead;
        continue;
      }
      let end = bytesRead;
      while (bytes[end - 1] === 0) end -= 1;
      endOfNonZero = position + end;
      for (let offset = 0; offset < bytesRead; ) {
        const newline = bytes.indexOf(0x0a, offset);
        const piece = bytes.subarray(offset, newline < 0 ? bytesRead : newline);
        if (piece.includes(0)) lineHasZero = true;
        if (newline < 0) {
          if (!lineHasZero) partial.push(Buffer.from(piece));
          break;
        }
        const line = lineHasZero ? undefined : partial.length === 0 ? piece : Buffer.concat([...partial, piece]);
        partial = [];
        lineHasZero = false;
        if (intact) {
          const record = line && decodeLine(line, lineStart, decode);
          if (line !== undefined && record !== undefined) {
            if (line[9] === WRITE_START_MARK) marked = true;
            onRecord(record);
            validBytes = position + newline + 1;
          } else {
            intact = false;
            // Zeros are a write that did not reach the disk; a mark on the damaged line, a write's first record (a log's first).
            sameWriteMayFollow = marked || line === undefined || line[9] === WRITE_START_MARK;
            const embedded = line && embeddedRecordAt(line);
            if (embedded !== undefined) {
              laterWriteAt = lineStart + embedded;
              break;
            }
          }
        } else if (line !== undefined) {
          let laterRecord: number | undefined;
          if (!checksumMatches(line)) laterRecord = embeddedRecordAt(line);
          else if (line[9] === WRITE_START_MARK || !sameWriteMayFollow) laterRecord = 0;
          if (laterRecord !== undefined) {
            laterWriteAt = lineStart + laterRecord;
            break;
          }
        }
        offset = newline + 1;
        lineStart = position + offset;
      }
      position += bytesRead;
    }
    return { validBytes, totalBytes: Math.max(validBytes, endOfNonZero), laterWriteAt };
  }

  /** Open for appending after cutting anything past `validBytes` (a torn tail, zeros filled ahead). */
  static async openForAppend(path: string, validBytes: number, checkWritable: WritableCheck = () => undefined): Promise<WriteAheadLog> {
    const refused = checkWritable();
    if (refused) throw refused;
    const handle = await open(path, LOG_FLAGS);
    try {
      const { size } = await handle.stat();
      if (size > validBytes) {
        const refused = checkWritable();
        if (refused) throw refused;
        await handle.truncate(validBytes);
        await handle.sync();
      }
      return new WriteAheadLog(path, handle, validBytes, checkWritable);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Size of the log once every appended record is on disk. */
  get bytes(): number {
    return this.size + this.pendingBytes;
  }

  /**
   * Where the records that were synced end: after a failure (see `failed`), the failed batches'
   * records, which were never acknowledged, start here, whatever of them reached the disk.
   */
  get syncedBytes(): number {
    return this.size;
  }

  /** The error that stopped this log, if a write or fdatasync failed. */
  get failed(): Error | undefined {
    return this.failure;
  }

  /** Durably append one record, given as its JSON text; resolves only once it is on disk. */
  append(json: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const written = this.enqueue(json, true);
    this.startBatches();
    return written;
  }

  /**
   * Append one record without starting an fdatasync for it: it goes to disk with
   * the next batch. Resolves once it is on disk, like `append`; for records whose
   * caller need not wait for that.
   */
  appendLazily(json: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const written = this.enqueue(json, false);
    this.lazySync ??= setTimeout(() => {
      this.lazySync = undefined;
      this.syncSoon();
    }, LAZY_SYNC_MS);
    return written;
  }

  /** Write the records that wait, lazy ones too, without waiting for a later append or a lazy record's timer. */
  syncSoon(): void {
    if (this.pending.length === 0) return;
    this.urgent = true;
    this.startBatches();
  }

  /** Start writing the records that wait, if no batch is being written (a batch that is will take them next). */
  private startBatches(): void {
    if (this.pending.length === 0 || this.flushing) return;
    this.flushing = performance.now() < this.pooledUntil ? this.flushThroughPool() : this.flushAtEndOfTurn();
  }

  /** Write what waits as one batch once this turn's appends are in, on the event loop. */
  private flushAtEndOfTurn(): Promise<void> {
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        const write = () => {
          this.flushing = undefined;
          this.writeInline();
          resolve();
          // Appended by the records' callers as they resumed: the next turn's batch.
          this.startBatches();
        };
        // A batch that would reach into zeros still being written waits for them (this flush is still on).
        const fill = this.fillInTheWay(this.size + this.pendingBytes);
        if (fill) void fill.then(write);
        else write();
      }),
    );
  }

  private writeInline(): void {
    const batch = this.takeBatch();
    if (!batch) return;
    const refused = this.checkWritable();
    if (refused) {
      this.fail(batch.records, refused);
      return;
    }
    const started = performance.now();
    try {
      let written = 0;
      while (written < batch.bytes.length) written += writeSync(this.handle.fd, batch.bytes, written, batch.bytes.length - written, this.positionOf(written));
      if (!SYNCED_WRITES) fdatasyncSync(this.handle.fd);
    } catch (error) {
      try {
        ftruncateSync(this.handle.fd, this.size);
      } catch {
        // The failure below already stops the log; a reopen cuts the torn tail.
      }
      this.fail(batch.records, error);
      return;
    }
    const finished = performance.now();
    this.inlineAverageMs += (finished - started - this.inlineAverageMs) * INLINE_AVERAGE_WEIGHT;
    if (this.inlineAverageMs > INLINE_WRITE_LIMIT_MS) {
      this.pooledUntil = finished + INLINE_RETRY_MS;
      // Back on the event loop, the disk is judged afresh.
      this.inlineAverageMs = 0;
    }
    this.settle(batch);
  }

  /**
   * Write and sync batches through the thread pool until none is waiting (see nextPooledBatch), or
   * until INLINE_RETRY_MS is over: then the records that wait go inline, and the disk is judged afresh,
   * also under a load that never lets the pool run out of batches.
   */
  private async flushThroughPool(): Promise<void> {
    const next = (synced: number) => (performance.now() < this.pooledUntil ? this.nextPooledBatch(synced) : undefined);
    for (let batch = this.takeBatch(); batch; batch = await next(batch.records.length)) {
      const fill = this.fillInTheWay(this.size + batch.bytes.length);
      if (fill) await fill;
      const refused = this.checkWritable();
      if (refused) {
        this.fail(batch.records, refused);
        break;
      }
      try {
        let written = 0;
        while (written < batch.bytes.length) {
          const { bytesWritten } = await this.handle.write(batch.bytes, written, batch.bytes.length - written, this.positionOf(written));
          written += bytesWritten;
        }
        if (!SYNCED_WRITES) await this.handle.datasync();
      } catch (error) {
        // Cut a partial write so a reopen does not find garbage before the torn-tail check.
        await this.handle.truncate(this.size).catch(() => undefined);
        this.fail(batch.records, error);
        break;
      }
      this.settle(batch);
    }
    this.flushing = undefined;
    // Stopped for the time limit, with records waiting that would have gone next: they go inline now.
    if (this.eagerPending > 0 || this.urgent) this.startBatches();
  }

  /**
   * The batch to write after one of `synced` records: what waits, once it is at least half
   * as many records, or else at the end of this turn. Taking at once what arrived during
   * the sync made callers fall into two groups of fixed sizes (49 and 1 at 50 concurrent
   * here): the large group's next records waited behind the small group's sync with the
   * event loop idle. Taking half splits them evenly, so one half's sync overlaps the other
   * half's work. A record still waits for no more than this turn to start its batch, and
   * lazy records, which count for nothing here, for no more than they would otherwise.
   */
  private nextPooledBatch(synced: number): Promise<Batch | undefined> {
    const wanted = Math.ceil(synced / 2);
    if (this.eagerPending >= wanted) return Promise.resolve(this.takeBatch());
    return new Promise((resolve) => {
      const endOfTurn = setImmediate(() => {
        this.batchWanted = undefined;
        // Lazy records alone go on waiting for an append to join (or their timer), unless syncSoon asked for them.
        resolve(this.eagerPending > 0 || this.urgent ? this.takeBatch() : undefined);
      });
      this.batchWanted = {
        records: wanted,
        take: () => {
          clearImmediate(endOfTurn);
          this.batchWanted = undefined;
          resolve(this.takeBatch());
        },
      };
    });
  }

  /** Queue a record for the next batch; start that batch if the pool loop waits for it to fill. */
  private enqueue(json: string, eager: boolean): Promise<void> {
    // Every batch takes all that waits, so a record that finds nothing waiting starts the next synced write.
    const line = encodeLine(json, this.pending.length === 0);
    this.pendingBytes += line.length;
    const written = new Promise<void>((resolve, reject) => this.pending.push({ line, resolve, reject }));
    if (eager) this.eagerPending += 1;
    if (this.batchWanted && this.eagerPending >= this.batchWanted.records) this.batchWanted.take();
    return written;
  }

  /** The records waiting, as one batch and its bytes; none once the log failed. A lazy record's timer is then moot. */
  private takeBatch(): Batch | undefined {
    clearTimeout(this.lazySync);
    this.lazySync = undefined;
    if (this.pending.length === 0 || this.failure) return undefined;
    const records = this.pending;
    this.pending = [];
    this.eagerPending = 0;
    this.urgent = false;
    return { records, bytes: records.length === 1 ? records[0]!.line : Buffer.concat(records.map((record) => record.line)) };
  }

  private settle({ records, bytes }: Batch): void {
    this.size += bytes.length;
    this.pendingBytes -= bytes.length;
    this.filledTo = Math.max(this.filledTo, this.size);
    for (const record of records) record.resolve();
    this.fillAheadIfLow();
  }

  /** Where byte `written` of the batch being written goes: after the last record (zeros may follow it); else appended. */
  private positionOf(written: number): number | null {
    return FILLS_AHEAD ? this.size + written : null;
  }

  /** The fill a batch ending at `end` must wait for: one being written at or before `end`. */
  private fillInTheWay(end: number): Promise<void> | undefined {
    return this.filling && end > this.filling.from ? this.filling.done : undefined;
  }

  /**
   * Start writing zeros ahead of the last record (through the thread pool) once less than half
   * of the next fill is left, while batches go on into the space before it. A failed fill (a
   * full disk) only leaves the batches writing past the end of the file, as without fills.
   */
  private fillAheadIfLow(): void {
    if (!FILLS_AHEAD || this.filling || this.failure) return;
    if (this.filledTo - this.size - this.pendingBytes >= this.nextFillBytes / 2) return;
    const from = this.filledTo;
    const bytes = this.nextFillBytes;
    this.nextFillBytes = Math.min(FILL_MAX_BYTES, bytes * 2);
    // Settled a turn later at the soonest: `filling` is set below before it is cleared.
    const done = this.writeZeros(from, bytes).finally(() => (this.filling = undefined));
    this.filling = { from, done };
  }

  /** Write `bytes` zeros at `from` as one synced write; never rejects. */
  private async writeZeros(from: number, bytes: number): Promise<void> {
    // Zeros past this log's end may be over another writer's records; the next batch fails the log.
    if (this.checkWritable()) return;
    try {
      const chunk = zeros();
      let written = 0;
      while (written < bytes) {
        // The chunks of one write are all the same zeros.
        const chunks = Array.from({ length: Math.ceil((bytes - written) / chunk.length) }, () => chunk);
        const { bytesWritten } = await this.handle.writev(chunks, from + written);
        written += bytesWritten;
      }
      this.filledTo = Math.max(this.filledTo, from + bytes);
    } catch {
      // Nothing to undo: zeros past the last record are no record (see read).
    }
  }

  private fail(batch: PendingRecord[], error: unknown): void {
    this.failure = error instanceof Error ? error : new Error(String(error));
    for (const record of [...batch, ...this.pending]) record.reject(this.failure);
    this.pending = [];
    this.eagerPending = 0;
  }

  /** Wait for every appended record to be synced (or failed), then close the file, cut at its last record. Idempotent. */
  close(): Promise<void> {
    this.closed ??= this.closeFile();
    return this.closed;
  }

  private async closeFile(): Promise<void> {
    this.syncSoon();
    await this.flushing;
    await this.filling?.done;
    // A closed log ends at its last record, without the zeros filled ahead of it: unless another writer's records are there now.
    if (FILLS_AHEAD && this.filledTo > this.size && !this.checkWritable()) await this.handle.truncate(this.size).catch(() => undefined);
    await this.handle.close();
  }
}

let zeroChunk: Buffer | undefined;
/** The zeros every fill writes, made on the first fill. */
function zeros(): Buffer {
  zeroChunk ??= Buffer.alloc(FILL_CHUNK_BYTES);
  return zeroChunk;
}

/**
 * A record's line, `<crc32 of the JSON, 8 hex digits> <JSON>\n`: what a log holds, and a snapshot (see
 * FileStateAdapter); with `startsWrite`, the JSON has WRITE_START_MARK before it.
 */
export function encodeLine(text: string, startsWrite = false): Buffer {
  // The text is encoded to UTF-8 once, in place, and its checksum taken of those bytes (crc32 of a
  // string would encode it a second time): about a third less time per record.
  const start = startsWrite ? 10 : 9;
  const length = Buffer.byteLength(text, "utf8");
  const line = Buffer.allocUnsafe(start + length + 1);
  line.write(text, start, length, "utf8");
  if (startsWrite) line[9] = WRITE_START_MARK;
  line.write(crc32(line.subarray(9, start + length)).toString(16).padStart(8, "0"), 0, 8, "latin1");
  line[8] = 0x20;
  line[start + length] = 0x0a;
  return line;
}

/** A record's JSON bytes as the record. */
function decodeJson(json: Buffer): unknown {
  return JSON.parse(json.toString("utf8"));
}

/**
 * The record the line at byte `at` holds, or undefined if its checksum does not match (a torn write,
 * or damage). One whose checksum matches holds what was written: if it cannot be decoded (a record
 * over the ~512 MiB Node.js decodes into one string), that is no torn write to cut off.
 */
function decodeLine(line: Buffer, at: number, decode: RecordDecoder): unknown {
  if (!checksumMatches(line)) return undefined;
  try {
    return decode(line.subarray(9));
  } catch (error) {
    throw new UndecodableRecordError(at, line.length, (error as NodeJS.ErrnoException).code === "ERR_STRING_TOO_LONG", error);
  }
}

/** Whether `line` is `<crc32 of the JSON, 8 hex digits> <JSON>` with the checksum matching. */
function checksumMatches(line: Buffer): boolean {
  if (line.length < 10 || line[8] !== 0x20) return false;
  const expected = Number.parseInt(line.subarray(0, 8).toString("ascii"), 16);
  return Number.isInteger(expected) && crc32(line.subarray(9)) === expected;
}

/**
 * Where a record starts inside the damaged `line` that runs, intact, to the line's end, or undefined:
 * the line lost its newline to damage and ran into the next record. A torn write leaves zeros or
 * a line cut short, never a record whole after damage on its line.
 */
function embeddedRecordAt(line: Buffer): number | undefined {
  for (let space = line.indexOf(0x20, 9); space >= 0; space = line.indexOf(0x20, space + 1)) {
    if (!startsRecordJson(line, space + 1)) continue;
    const start = space - 8;
    if (isLowerHex(line, start, space) && checksumMatches(line.subarray(start))) return start;
  }
  return undefined;
}

/**
 * Whether a record's JSON (after the mark, if any) may start at `at`: `{"` or `["`, as every record's
 * and snapshot row's does. Inside a record, JSON has no space outside its strings and escapes each `"` in
 * them, so no space in a record's text is followed so: only a line's start is checksummed, not each
 * space before a "{" in a string (a hexdump in a tool's output has thousands, each a checksum over the rest).
 */
function startsRecordJson(line: Buffer, at: number): boolean {
  const json = line[at] === WRITE_START_MARK ? at + 1 : at;
  return (line[json] === 0x7b || line[json] === 0x5b) && line[json + 1] === 0x22;
}

/** Whether `bytes[from..to)` are all hex digits as encodeLine writes them (0-9, a-f). */
function isLowerHex(bytes: Buffer, from: number, to: number): boolean {
  for (let index = from; index < to; index += 1) {
    const byte = bytes[index]!;
    if (!((byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66))) return false;
  }
  return true;
}

/** The error for a log whose record at `error.at` has a matching checksum but cannot be decoded. */
function undecodableLogError(path: string, error: UndecodableRecordError): AssemblyLineError {
  const cut = `To keep only the records before it instead, cut the file to ${error.at} bytes (truncate -s ${error.at} ${path}): that record and every later one are then lost.`;
  const fix = error.tooLong
    ? `The record is intact on disk, but too long to read back in Node.js ${process.version}; nothing was cut from the file. Restore ${dirname(path)} from a backup. ${cut}`
    : `The file was changed outside Assembly Line; nothing was cut from it. Restore ${dirname(path)} from a backup. ${cut}`;
  return new AssemblyLineError("AL_ERR_STATE_ROW_INVALID", `the local state file ${path} cannot be read back: ${error.message}`, {
    fix,
    cause: error,
    details: { path, at: error.at, bytes: error.bytes },
  });
}
