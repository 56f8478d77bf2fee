import {
  AssemblyLineError,
  checkConversationAppend,
  checkFileRecord,
  checkLeaseOwner,
  checkListLimit,
  checkMemoryWrite,
  checkNewEvents,
  checkNewRun,
  checkObservedSeq,
  checkScheduleClaimed,
  checkScheduleDeleteIf,
  checkScheduleInput,
  checkScheduleReplace,
  checkSeqNumber,
  checkSettingWrite,
  checkedDate,
  checkedTimeText,
  checkedUsageRecord,
  definedStateValue,
  copyStateValue,
  checkSkillKey,
  checkSkillRecord,
  compareCodePoints,
  fenceHolds,
  isClaimableBy,
  isLeaseFree,
  isSameSchedule,
  isScheduleClaimableBy,
  jsonExactCopy,
  leaseExpiresAt,
  isInConversationScope,
  staleFenceError,
  TERMINAL_RUN_STATUSES,
  type CheckpointRecord,
  type ClaimOptions,
  type ConversationMessage,
  type ConversationScope,
  type DeliveryRecord,
  type FailDeliveryOptions,
  type FileListOptions,
  type FileRecord,
  type FileRecordPage,
  type JsonValue,
  type MemoryEntry,
  type MemoryPage,
  type MemoryRecord,
  type NewRun,
  type NewRunEvent,
  type AppendOptions,
  type CreateRunOptions,
  type CreatedRun,
  type ReleaseOptions,
  type RunEvent,
  type RunFence,
  type RunLease,
  type TakenRunLease,
  type ClaimedRunRecord,
  type RunListFilter,
  type RunPage,
  type RunRecord,
  type RunStateChange,
  type SandboxSessionRecord,
  type ScheduleClaimOptions,
  type ScheduleRecord,
  type SettingAuditEvent,
  type SkillRecord,
  type StateAdapter,
  type StepRecord,
  type ToolCallRecord,
  type UsageFilter,
  type UsageRecord,
  isoTimestamp,
  isAssemblyLineError,
} from "@assemblyline-agents/core";
import { constants } from "node:buffer";
import { randomUUID } from "node:crypto";
import { mkdir, open, readdir, rename, unlink, type FileHandle } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describeOptions, unknownOptions } from "../known-options.js";
import { FolderLock } from "./folder-lock.js";
import {
  StateTables,
  createdEventOf,
  flatJson,
  loggedEventText,
  skillKey,
  snapshotLines,
  stepOf,
  toolCallOf,
  type AppliedOp,
  type LoggedEvent,
  type SnapshotTable,
  type StateOp,
  type TablesCut,
  type TablesSnapshot,
} from "./tables.js";
import { lineLimits } from "./line-limits.js";
import { WriteAheadLog, encodeLine } from "./write-ahead-log.js";

/*
 * On-disk design. The folder holds:
 *   LOCK             the writer's pid and host (see FolderLock); one writer at a time
 *   snapshot.json    every table as of the start of generation N (absent: empty, N = 0), one
 *                    checksummed line per row, as the log's (see SNAPSHOT_FORMAT); only ever
 *                    replaced whole, by write-temp + fsync + rename + fsync(dir)
 *   log-N.wal        the write-ahead log of generation N: one checksummed line per
 *                    committed call, holding every primitive write (StateOp) it made,
 *                    and while open zeros written ahead of them (see WriteAheadLog);
 *                    log-(N+1), log-(N+2)... follow it while a newer snapshot is written
 *
 * A call computes its writes against the in-memory tables, appends them as ONE log
 * record, applies them to the tables (the next call plans against them), and resolves
 * only once the record is synced (see WriteAheadLog; a read likewise answers only
 * once what it saw is synced). An event and
 * the state change it describes therefore share a record: after kill -9 both are on
 * disk or neither is. Opening replays the snapshot, then log-N, log-(N+1)... in turn,
 * and cuts a torn last record of the last log; a damaged record that records of a later
 * synced write follow is no torn write, and the folder is refused (see WriteAheadLog).
 * A process that lost the folder's lock (another one took it over, see FolderLock) writes
 * nothing more to the folder, nor answers from its tables: each call, batch of log records,
 * fill, cut, compaction step and recovery first checks that the LOCK file it created is still
 * in place (FolderLock.stillHeld), and fails its calls with AL_ERR_STATE_LOCKED otherwise;
 * closing it then cuts nothing.
 * A failed write (a full disk) fails its call and every call in flight; the next call
 * cuts the log back to its last synced record and replays the folder into fresh tables,
 * dropping what failed, and goes on (see `recover`), the lock held throughout.
 * When the log outgrows `compactAfterBytes` and the snapshot, and the records that later
 * ones replaced or deleted make up `compactWhenSuperseded` of the folder (a state that
 * mostly grows gains nothing from being rewritten), it is closed once every
 * record in it is durable, writes go on in log-(N+1), and the tables as they were at
 * that cut are written as snapshot N+1 in the background (writes never wait for it);
 * once it replaced the old snapshot, log-N is deleted. A crash at any point leaves a
 * snapshot and every log after it, which replay to the same tables. On opening, what a
 * cut-short fold left (or an outgrown log) is folded before the first call, and log-(N+1)
 * is begun only once snapshot N+1 is in place.
 *
 * Every line must read back as one string (see lineLimits): a call whose record is longer
 * than `lineLimits.recordBytes` is refused before anything is written, and a snapshot row
 * holds at most about `lineLimits.snapshotRowChars` of a run or conversation (see
 * snapshotLines). A fold that fails (a full disk, a line too long all the same) replaces
 * nothing and deletes no log: it is reported as a process warning (AL_ERR_STATE_COMPACTION),
 * and tried again only once the log has grown by as much as that fold would have folded.
 */

const SNAPSHOT_FILE = "snapshot.json";
/**
 * Format 2: lines as the log's (`<crc32> <JSON>`), a header `{"format":2,"generation":N}`, then one
 * line per row, `["<table>",<row>]`, and last `["end",<rows>]`. Read a line at a time, the rows of a
 * large state become the tables' entries as they are read: format 1, one JSON document of every
 * table, was parsed whole into objects first, and a folder of 100,000 runs took 16 s and 1.5 GB of
 * memory to open from it. Folders written in format 1 are still read (`{` is its first byte).
 */
const SNAPSHOT_FORMAT = 2;
const LEGACY_SNAPSHOT_FORMAT = 1;
const DEFAULT_COMPACT_AFTER_BYTES = 8 * 1024 * 1024;
const DEFAULT_COMPACT_WHEN_SUPERSEDED = 0.5;
const DEFAULT_CLAIM_LIMIT = 100;
/**
 * After a failed log write, the folder is replayed from disk on a later call (see `recover`), but at
 * most once per this long after the last try ended: a disk still full is not replayed over and over.
 */
const RECOVERY_INTERVAL_MS = 1_000;

const logFile = (generation: number) => `log-${generation}.wal`;
/** The generation a file name is the log of, if it is one. */
const logGeneration = (name: string): number | undefined => {
  const log = /^log-(\d+)\.wal$/.exec(name);
  return log ? Number(log[1]) : undefined;
};

export interface FileStateAdapterOptions {
  /** The state folder. Default: `<agentDir>/.assembly-line/state`. */
  directory?: string;
  /** The agent folder the default `directory` is under. Default: the working directory. */
  agentDir?: string;
  /** Fold the log into a new snapshot once it outgrows both this size and the last snapshot (and see compactWhenSuperseded). Default 8 MiB. */
  compactAfterBytes?: number;
  /**
   * ...and once records that later writes replaced or deleted make up at least this
   * share of the snapshot and log (0 to 1). Default 0.5: the folder then stays within
   * twice its live data, and a state that mostly grows is not rewritten over and over.
   * 0 folds whenever the log outgrows the snapshot.
   */
  compactWhenSuperseded?: number;
}

const OPTION_NAMES: readonly (keyof FileStateAdapterOptions)[] = ["directory", "agentDir", "compactAfterBytes", "compactWhenSuperseded"];

/**
 * Refuse what the adapter would ignore or misread: an unknown key (`dir`), a path
 * that is not a string, or a compactAfterBytes that is not a size (`"8MB"` compared
 * as NaN: the log was never folded and grew without end). localState() is checked
 * against its JSON schema too; this covers `new FileStateAdapter()`.
 */
function checkOptions(options: FileStateAdapterOptions): void {
  const fail = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_STATE_CONFIG", `FileStateAdapter ${problem}`, { fix });
  };
  if (typeof options !== "object" || options === null || Array.isArray(options)) fail("options must be an object", "Pass { directory } or nothing.");
  const unknown = unknownOptions(options, OPTION_NAMES);
  if (unknown.length > 0) fail(`${describeOptions(unknown)} unknown`, `The options are ${OPTION_NAMES.join(", ")}.`);
  for (const key of ["directory", "agentDir"] as const) {
    const value = options[key];
    if (value !== undefined && (typeof value !== "string" || value === "")) fail(`option ${key} is ${JSON.stringify(value)}; it must be a folder path`, `Pass ${key} as a non-empty string, or leave it out.`);
  }
  const size = options.compactAfterBytes;
  if (size !== undefined && !(typeof size === "number" && Number.isFinite(size) && size >= 0)) {
    fail(`option compactAfterBytes is ${JSON.stringify(size)}; it must be a number of bytes, 0 or more`, "Pass a size in bytes, e.g. 8388608 for 8 MiB, or leave it out.");
  }
}

/** A snapshot of format 1, as it is parsed. */
interface LegacySnapshotFile {
  format: number;
  generation: number;
  tables: TablesSnapshot;
}

/** A snapshot as it is read: its generation, and the tables it holds. */
interface ReadSnapshot {
  generation: number;
  tables: StateTables;
}

interface Plan<T> {
  ops: StateOp[];
  /** Reads the answer from the tables after the ops are applied. */
  result: (tables: StateTables) => T;
  /** The answer is built afresh for the caller (events parsed from their texts): it is not copied again. */
  fresh?: boolean;
}

const copy = <T>(value: T): T => copyStateValue(value);

const claimLimit = (limit: number | undefined): number => Math.max(0, limit ?? DEFAULT_CLAIM_LIMIT);

/**
 * Every state facet in a folder on the local disk: the embedded default when an
 * agent runs without a gateway. Crash-safe (see the design note above) and
 * single-writer: a second live process opening the folder gets AL_ERR_STATE_LOCKED.
 *
 * The folder is opened on the first call (or by `open()`), and `close()` releases it.
 * Semantics match the state contracts; in particular step keys are insert-once, a
 * delivery id is enqueued once, and completing or failing a delivery or schedule
 * run is ignored unless the caller holds its lease.
 */
export class FileStateAdapter implements StateAdapter {
  readonly directory: string;
  private readonly compactAfterBytes: number;
  private readonly compactWhenSuperseded: number;
  private opening: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private tables = new StateTables();
  private log: WriteAheadLog | undefined;
  private lock: FolderLock | undefined;
  private generation = 0;
  /** Size of the current snapshot: the log may grow to this before compaction, keeping rewrites linear. */
  private snapshotBytes = 0;
  /** Bytes of records written since the last cut that later records replaced or deleted (an estimate, see StateTables.apply). */
  private supersededBytes = 0;
  /** Bytes of the logs before the current one that the snapshot does not hold yet (a fold in progress, or one that failed). */
  private unfoldedLogBytes = 0;
  /** After a failed fold, how large the current log must grow before the next is tried (0: no fold failed since the last one). */
  private foldRetryAtLogBytes = 0;
  /** The snapshot being written in the background, if any (see the design note). */
  private compaction: Promise<void> | undefined;
  /** Mutations run one at a time, in call order. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Tasks queued or running; with none, an open adapter runs a mutation's plan at once. */
  private queued = 0;
  /** Resolves once the last record applied to the tables is on disk. */
  private durable: Promise<void> = Promise.resolve();
  /**
   * The last write to the memory and file tables (each resolves once it is on disk): a read of
   * one of them waits for that, not for every run's write in flight. A run's context reads both
   * while other runs' events are being synced, and none of those can be in what it reads.
   */
  private readonly lastWriteTo: Record<SeparateTable, Promise<void>> = { memory: Promise.resolve(), file: Promise.resolve() };
  /**
   * Run leases (run id -> token) found when this adapter took the folder's lock.
   * Their holders were processes that no longer hold the lock (dead, or closed),
   * so they can write nothing more: those runs are taken over at once instead of
   * after the lease expires.
   */
  private orphanedLeases = new Map<string, number>();
  /** The replay after a failed log write, while it runs (see `recover`). */
  private recovering: Promise<void> | undefined;
  /** When the last replay after a failed log write ended (performance.now()). */
  private recoveredAt = Number.NEGATIVE_INFINITY;

  constructor(options: FileStateAdapterOptions = {}) {
    checkOptions(options);
    this.directory = resolve(options.directory ?? join(options.agentDir ?? process.cwd(), ".assembly-line", "state"));
    this.compactAfterBytes = options.compactAfterBytes ?? DEFAULT_COMPACT_AFTER_BYTES;
    this.compactWhenSuperseded = options.compactWhenSuperseded ?? DEFAULT_COMPACT_WHEN_SUPERSEDED;
    if (!(typeof this.compactWhenSuperseded === "number" && this.compactWhenSuperseded >= 0 && this.compactWhenSuperseded <= 1)) {
      throw new AssemblyLineError("AL_ERR_STATE_CONFIG", `FileStateAdapter option compactWhenSuperseded is ${String(options.compactWhenSuperseded)}; it must be a number from 0 to 1`, {
        fix: "Pass the share of superseded records at which to compact, e.g. 0.5, or leave it out.",
      });
    }
  }

  /** Construct and open, so a locked or unreadable folder fails here rather than on first use. */
  static async open(options: FileStateAdapterOptions = {}): Promise<FileStateAdapter> {
    const adapter = new FileStateAdapter(options);
    await adapter.open();
    return adapter;
  }

  /** Take the folder's lock and load its state. Idempotent. */
  open(): Promise<void> {
    if (this.closing) return Promise.reject(this.closedError());
    this.opening ??= this.load().catch((error: unknown) => {
      this.opening = undefined;
      throw error;
    });
    return this.opening;
  }

  /** Finish pending writes, close the log and release the lock. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.opening) return;
      await this.opening.catch(() => undefined);
      await this.recovering?.catch(() => undefined);
      await this.queue.catch(() => undefined);
      await this.compaction;
      this.log?.syncSoon();
      await this.durable.catch(() => undefined);
      await this.log?.close();
      this.log = undefined;
      await this.lock?.release();
      this.lock = undefined;
    })();
    return this.closing;
  }

  // ---- runs ----------------------------------------------------------------

  createRun(run: NewRun, options: CreateRunOptions = {}): Promise<CreatedRun> {
    return this.mutate<CreatedRun>((tables) => {
      checkNewRun("createRun", run, options);
      const existingId = run.idempotencyKey !== undefined ? tables.idempotency.get(run.idempotencyKey) : undefined;
      const existing = tables.runs.get(existingId ?? run.id);
      if (existing) return { ops: [], result: () => ({ run: existing.record, created: false }) };

      const nowMs = Date.now();
      const now = isoTimestamp(nowMs);
      const leaseExpiry = options.lease ? leaseExpiresAt("createRun", "options.lease.ttlMs", nowMs, options.lease.ttlMs) : undefined;
      const record: RunRecord = {
        id: run.id,
        agentId: run.agentId,
        agentRevision: run.agentRevision,
        conversationId: run.conversationId ?? null,
        status: run.status ?? "queued",
        modelSpec: run.modelSpec,
        input: run.input,
        output: null,
        error: null,
        lastSeq: 1,
        observedSeq: 0,
        // A new run's first lease has the first token.
        lease: options.lease ? { owner: options.lease.owner, expiresAt: leaseExpiry!, token: 1 } : null,
        createdAt: now,
        updatedAt: now,
      };
      return {
        // The run.created event follows from the record: the log leaves it out, the tables derive it.
        ops: [{ op: "run.create", run: record, ordinal: tables.nextOrdinal, idempotencyKey: run.idempotencyKey ?? null }],
        result: (after) => {
          const { record: stored } = after.runs.get(run.id)!;
          // A copy of the event its text was made from: what parsing that text gives, for less.
          return { run: copy(stored), created: true, createdEvent: copy(createdEventOf(stored)) };
        },
        fresh: true,
      };
    });
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.read((tables) => tables.runs.get(runId)?.record);
  }

  listRuns(filter: RunListFilter = {}): Promise<RunPage> {
    return this.read((tables) => {
      const { runs, nextCursor } = tables.runOrder.page(filter);
      return { runs: runs.map(({ record }) => record), nextCursor };
    });
  }

  appendEvents(
    runId: string,
    events: NewRunEvent[],
    change?: RunStateChange,
    options: AppendOptions = {},
  ): Promise<RunEvent[]> {
    return this.mutate((tables) => {
      if (options.expectedLastSeq !== undefined) checkSeqNumber(`appendEvents(run "${runId}")`, "options.expectedLastSeq", options.expectedLastSeq);
      const entry = this.requireRun(tables, runId);
      const current = entry.record;
      // Checked inside the mutation queue, so no lease change can slip between the check and the write.
      if (options.fence && !fenceHolds(current.lease, options.fence)) throw staleFenceError(runId, options.fence, current.lease);
      if (options.expectedLastSeq !== undefined && options.expectedLastSeq !== current.lastSeq) {
        throw new AssemblyLineError(
          "AL_ERR_EVENT_SEQ",
          `run ${runId} is at seq ${current.lastSeq}, but the append expected seq ${options.expectedLastSeq}`,
          {
            fix: "Another writer appended to this run; reload it and decide again, or hold the run's lease while writing.",
            details: { runId, lastSeq: current.lastSeq, expectedLastSeq: options.expectedLastSeq },
          },
        );
      }
      checkNewEvents(`appendEvents(run "${runId}")`, events);
      checkObservedSeq(`appendEvents(run "${runId}")`, "options.observedSeq", options.observedSeq, current.lastSeq + events.length);
      const now = isoTimestamp();
      // The events share one time, written once for the op.
      const appended: LoggedEvent[] = events.map((event, index) => ({ seq: current.lastSeq + index + 1, type: event.type, data: event.data ?? {} }));

      const set: Partial<RunRecord> = { lastSeq: current.lastSeq + appended.length, updatedAt: now };
      if (options.observedSeq !== undefined && options.observedSeq > current.observedSeq) set.observedSeq = options.observedSeq;
      const ops: StateOp[] = [];
      if (appended.length > 0) ops.push({ op: "events.append", runId, createdAt: now, events: appended });
      if (change?.run) {
        const { status, modelSpec, output, error, conversationId } = change.run;
        if (status !== undefined) set.status = status;
        if (modelSpec !== undefined) set.modelSpec = modelSpec;
        if (output !== undefined) set.output = output;
        if (error !== undefined) set.error = error;
        if (conversationId !== undefined) set.conversationId = conversationId;
      }
      ops.push({ op: "run.patch", runId, set });
      // The whole call, even when a few fields changed: the tables keep it as the text the log holds.
      if (change?.toolCall) ops.push({ op: "toolCall.put", call: { ...change.toolCall, runId } });
      if (change?.step && !entry.steps.has(change.step.key)) ops.push({ op: "step.put", step: { ...change.step, runId } });
      if (change?.checkpoint !== undefined) {
        ops.push({ op: "checkpoint.put", runId, checkpoint: change.checkpoint === null ? null : { ...change.checkpoint, runId } });
      }
      if (change?.delivery && !tables.deliveries.has(change.delivery.id)) {
        ops.push({
          op: "delivery.put",
          delivery: {
            id: change.delivery.id,
            runId,
            channel: change.delivery.channel,
            conversationId: change.delivery.conversationId ?? null,
            payload: change.delivery.payload,
            status: "pending",
            attempts: 0,
            availableAt: now,
            lastError: null,
            lease: null,
            createdAt: now,
            updatedAt: now,
          },
        });
      }
      const count = appended.length;
      return {
        ops,
        result: (after) => {
          const appendedTo = after.runs.get(runId)!;
          const first = appendedTo.eventTexts.length - count;
          // The caller's copy of what it just wrote: a JSON-exact copy of each event's data is what parsing its text
          // would give, for less; data that has no such copy (a Date, an undefined field) is parsed from the text.
          return appended.map((event, index) => {
            const data = jsonExactCopy(event.data);
            if (data === undefined) return after.eventsOf(appendedTo, first + index, first + index + 1)[0]!;
            return { id: `${runId}:${event.seq}`, runId, seq: event.seq, type: event.type, data, createdAt: appendedTo.eventTimes[first + index]! };
          });
        },
        fresh: true,
      };
    });
  }

  listEvents(runId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<RunEvent[]> {
    return this.read(
      (tables) => {
        const operation = `listEvents(run "${runId}")`;
        if (options.limit !== undefined) checkListLimit(options.limit, operation);
        if (options.afterSeq !== undefined) checkSeqNumber(operation, "options.afterSeq", options.afterSeq);
        const entry = tables.runs.get(runId);
        if (!entry) return [];
        const count = entry.eventTexts.length;
        // Seqs are contiguous from 1, so the event with seq n sits at index n - 1.
        const start = Math.min(count, options.afterSeq ?? 0);
        const end = options.limit === undefined ? count : Math.min(count, start + options.limit);
        return tables.eventsOf(entry, start, end);
      },
      { fresh: true },
    );
  }

  markObserved(runId: string, seq: number): Promise<void> {
    return this.mutate((tables) => {
      const { record } = this.requireRun(tables, runId);
      checkObservedSeq(`markObserved(run "${runId}")`, "seq", seq, record.lastSeq);
      return { ops: seq > record.observedSeq ? [{ op: "run.patch", runId, set: { observedSeq: seq } }] : [], result: () => undefined };
    });
  }

  getToolCall(runId: string, callId: string): Promise<ToolCallRecord | undefined> {
    return this.read(
      (tables) => {
        const text = tables.runs.get(runId)?.toolCalls.get(callId);
        return text === undefined ? undefined : toolCallOf(text);
      },
      { fresh: true },
    );
  }

  listToolCalls(runId: string): Promise<ToolCallRecord[]> {
    return this.read((tables) => [...(tables.runs.get(runId)?.toolCalls.values() ?? [])].map(toolCallOf), { fresh: true });
  }

  getStep(runId: string, key: string): Promise<StepRecord | undefined> {
    return this.read(
      (tables) => {
        const text = tables.runs.get(runId)?.steps.get(key);
        return text === undefined ? undefined : stepOf(text);
      },
      { fresh: true },
    );
  }

  getCheckpoint(runId: string): Promise<CheckpointRecord | undefined> {
    return this.read((tables) => tables.runs.get(runId)?.checkpoint);
  }

  acquireRunLease(runId: string, owner: string, ttlMs: number, now?: Date): Promise<TakenRunLease | null> {
    return this.mutate<TakenRunLease | null>((tables) => {
      const entry = this.requireRun(tables, runId);
      const { record } = entry;
      const at = now ?? new Date();
      checkLeaseOwner(`acquireRunLease(run "${runId}")`, "owner", owner);
      const expiresAt = leaseExpiresAt(`acquireRunLease(run "${runId}")`, "ttlMs", at.getTime(), ttlMs);
      if (TERMINAL_RUN_STATUSES.includes(record.status)) return { ops: [], result: () => null };
      if (record.lease && record.lease.owner !== owner && !this.leaseIsFree(runId, record.lease, at)) return { ops: [], result: () => null };
      const lease: RunLease = { owner, expiresAt, token: entry.fence + 1 };
      const replaced = record.lease;
      return { ops: [{ op: "run.patch", runId, set: { lease } }], result: () => (replaced ? { ...lease, replaced: { owner: replaced.owner, expiresAt: replaced.expiresAt } } : lease) };
    });
  }

  renewRunLease(runId: string, fence: RunFence, ttlMs: number, now?: Date): Promise<RunLease | null> {
    return this.mutate<RunLease | null>((tables) => {
      const { record } = this.requireRun(tables, runId);
      const expiresAt = leaseExpiresAt(`renewRunLease(run "${runId}")`, "ttlMs", (now ?? new Date()).getTime(), ttlMs);
      if (TERMINAL_RUN_STATUSES.includes(record.status) || !fenceHolds(record.lease, fence)) return { ops: [], result: () => null };
      const lease: RunLease = { owner: fence.owner, expiresAt, token: fence.token };
      return { ops: [{ op: "run.patch", runId, set: { lease } }], result: () => lease };
    });
  }

  releaseRunLease(runId: string, owner: string, token?: number, options: ReleaseOptions = {}): Promise<void> {
    return this.mutate((tables) => {
      const record = tables.runs.get(runId)?.record;
      if (!record) return { ops: [], result: () => undefined };
      checkObservedSeq(`releaseRunLease(run "${runId}")`, "options.observedSeq", options.observedSeq, record.lastSeq);
      const holds = record.lease?.owner === owner && (token === undefined || record.lease.token === token);
      const observed = options.observedSeq !== undefined && options.observedSeq > record.observedSeq;
      // Set key by key, not spread from conditional objects: V8 gives every object spread that way a map of its own.
      const set: Partial<RunRecord> = {};
      if (holds) set.lease = null;
      if (observed) set.observedSeq = options.observedSeq!;
      const ops: StateOp[] = holds || observed ? [{ op: "run.patch", runId, set }] : [];
      return { ops, result: () => undefined };
      // Need not be on disk when answered (RunStore.releaseRunLease): it joins the next fdatasync.
    }, { lazy: true });
  }

  claimRecoverableRuns(options: ClaimOptions): Promise<ClaimedRunRecord[]> {
    return this.mutate((tables) => {
      const at = options.now ?? new Date();
      checkLeaseOwner("claimRecoverableRuns", "options.owner", options.owner);
      const expiresAt = leaseExpiresAt("claimRecoverableRuns", "options.ttlMs", at.getTime(), options.ttlMs);
      const { agentId } = options;
      const claimed = tables.runOrder.oldestUnfinished(
        ({ record }) =>
          (record.status === "queued" || record.status === "running") &&
          this.leaseIsFree(record.id, record.lease, at) &&
          isClaimableBy(record, agentId),
        claimLimit(options.limit),
      );
      // Read now: applying the claim replaces each entry's record.
      const replaced = claimed.map(({ record }) => record.lease);
      return {
        ops: claimed.map(({ record, fence }) => ({ op: "run.put", run: { ...record, lease: { owner: options.owner, expiresAt, token: fence + 1 } } }) as StateOp),
        result: (after) =>
          claimed.map(({ record }, index): ClaimedRunRecord => {
            const taken = after.runs.get(record.id)!.record;
            const lease = replaced[index];
            return lease ? { ...taken, replacedLease: { owner: lease.owner, expiresAt: lease.expiresAt } } : taken;
          }),
      };
    });
  }

  /** Free when expired, or when its holder lost the folder lock before this adapter took it. */
  private leaseIsFree(runId: string, lease: RunLease | null, at: Date): boolean {
    return isLeaseFree(lease, at) || (lease !== null && this.orphanedLeases.get(runId) === lease.token);
  }

  listDeliveries(runId: string): Promise<DeliveryRecord[]> {
    return this.read((tables) =>
      (tables.runs.get(runId)?.deliveryIds ?? []).flatMap((id) => {
        const delivery = tables.deliveries.get(id);
        return delivery ? [delivery] : [];
      }),
    );
  }

  claimDeliveries(options: ClaimOptions): Promise<DeliveryRecord[]> {
    return this.mutate((tables) => {
      const at = options.now ?? new Date();
      checkLeaseOwner("claimDeliveries", "options.owner", options.owner);
      const lease = { owner: options.owner, expiresAt: leaseExpiresAt("claimDeliveries", "options.ttlMs", at.getTime(), options.ttlMs) };
      const { agentId } = options;
      // Another agent's reply is skipped before the limit, so it never uses up this agent's claim.
      const claimed = tables.pendingDeliveries.due(
        at.getTime(),
        (record) => isLeaseFree(record.lease, at) && isClaimableBy(tables.runs.get(record.runId)?.record, agentId),
        claimLimit(options.limit),
      );
      return {
        // Counted when claimed, not when settled: a sender that dies mid-attempt (out of memory, SIGKILL) still used it up.
        // The log holds whole records, so replaying it never counts an attempt twice.
        ops: claimed.map((record) => ({ op: "delivery.put", delivery: { ...record, attempts: record.attempts + 1, lease, updatedAt: at.toISOString() } }) as StateOp),
        result: (after) => claimed.map((record) => after.deliveries.get(record.id)!),
      };
    });
  }

  completeDelivery(deliveryId: string, owner: string): Promise<void> {
    return this.mutate((tables) => {
      const record = tables.deliveries.get(deliveryId);
      if (!record || record.status !== "pending" || record.lease?.owner !== owner) return { ops: [], result: () => undefined };
      const delivery: DeliveryRecord = {
        ...record,
        status: "delivered",
        lease: null,
        lastError: null,
        updatedAt: isoTimestamp(),
      };
      return { ops: [{ op: "delivery.put", delivery }], result: () => undefined };
    });
  }

  failDelivery(deliveryId: string, owner: string, error: string, retryAt?: Date, options: FailDeliveryOptions = {}): Promise<void> {
    return this.mutate((tables) => {
      const record = tables.deliveries.get(deliveryId);
      if (!record || record.status !== "pending" || record.lease?.owner !== owner) return { ops: [], result: () => undefined };
      const delivery: DeliveryRecord = {
        ...record,
        // Only an explicit false gives it back: a value mistaken for one never under-counts. The put holds
        // the whole record, so replaying the log never gives an attempt back twice.
        ...(options.countAttempt === false ? { attempts: Math.max(0, record.attempts - 1) } : {}),
        lastError: error,
        lease: null,
        updatedAt: isoTimestamp(),
        ...(retryAt ? { availableAt: retryAt.toISOString() } : { status: "failed" as const }),
      };
      return { ops: [{ op: "delivery.put", delivery }], result: () => undefined };
    });
  }

  // ---- conversations ---------------------------------------------------------

  appendConversationMessages(conversationId: string, messages: ConversationMessage[], options: ConversationScope = {}): Promise<void> {
    const { agentId } = options;
    return this.mutate(() => {
      checkConversationAppend(`appendConversationMessages(conversation "${conversationId}")`, conversationId, messages, options);
      return {
        ops: messages.length > 0 ? [{ op: "conversation.append", conversationId, messages, ...(agentId !== undefined ? { agentId } : {}) }] : [],
        result: () => undefined,
      };
    });
  }

  listConversationMessages(conversationId: string, options: { limit?: number } & ConversationScope = {}): Promise<ConversationMessage[]> {
    const { agentId, limit } = options;
    return this.read((tables) => {
      if (limit !== undefined) checkListLimit(limit, `listConversationMessages(conversation "${conversationId}")`);
      const all = tables.conversations.get(conversationId) ?? [];
      // Filtered before the limit, so another agent's messages never use it up. Messages of logs and
      // snapshots written before agentId have none: legacy, listed to every agent.
      const list = agentId === undefined ? all : all.filter((message) => isInConversationScope(message, agentId));
      // slice(-0) would return everything, so a zero limit is handled on its own.
      const tail = limit === undefined ? list : limit === 0 ? [] : list.slice(-limit);
      return tail.map((message) => ({ ...message, agentId: message.agentId ?? null }));
    });
  }

  // ---- schedules -------------------------------------------------------------

  upsertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<void> {
    return this.mutate((tables) => {
      // Kept as an ISO UTC time, as PostgreSQL gives it back.
      const nextRunAt = checkScheduleInput("upsertSchedule", schedule);
      const lease = tables.schedules.get(schedule.id)?.lease ?? null;
      return { ops: [{ op: "schedule.put", schedule: { ...schedule, nextRunAt, lease } }], result: () => undefined };
    });
  }

  insertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    return this.mutate((tables) => {
      const nextRunAt = checkScheduleInput("insertSchedule", schedule);
      if (tables.schedules.has(schedule.id)) return { ops: [], result: () => false };
      return { ops: [{ op: "schedule.put", schedule: { ...schedule, nextRunAt, lease: null } }], result: () => true };
    });
  }

  replaceSchedule(expected: Omit<ScheduleRecord, "lease">, next: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    return this.mutate((tables) => {
      const nextRunAt = checkScheduleReplace(expected, next);
      const stored = tables.schedules.get(expected.id);
      if (!stored || !isSameSchedule(stored, expected)) return { ops: [], result: () => false };
      return { ops: [{ op: "schedule.put", schedule: { ...next, nextRunAt, lease: stored.lease } }], result: () => true };
    });
  }

  deleteScheduleIf(expected: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    return this.mutate((tables) => {
      checkScheduleDeleteIf(expected);
      const stored = tables.schedules.get(expected.id);
      if (!stored || !isSameSchedule(stored, expected)) return { ops: [], result: () => false };
      return { ops: [{ op: "schedule.delete", id: expected.id }], result: () => true };
    });
  }

  getSchedule(id: string): Promise<ScheduleRecord | undefined> {
    return this.read((tables) => tables.schedules.get(id));
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return this.read((tables) => [...tables.schedules.values()].sort((a, b) => compareCodePoints(a.id, b.id)));
  }

  claimDueSchedules(options: ScheduleClaimOptions): Promise<ScheduleRecord[]> {
    return this.mutate((tables) => {
      const at = options.now ?? new Date();
      checkLeaseOwner("claimDueSchedules", "options.owner", options.owner);
      const lease = { owner: options.owner, expiresAt: leaseExpiresAt("claimDueSchedules", "options.ttlMs", at.getTime(), options.ttlMs) };
      const claimed = [...tables.schedules.values()]
        .filter((s) => s.enabled && Date.parse(s.nextRunAt) <= at.getTime() && isLeaseFree(s.lease, at) && isScheduleClaimableBy(s, options.agentId))
        .sort((a, b) => Date.parse(a.nextRunAt) - Date.parse(b.nextRunAt) || compareCodePoints(a.id, b.id))
        .slice(0, claimLimit(options.limit));
      return {
        ops: claimed.map((schedule) => ({ op: "schedule.put", schedule: { ...schedule, lease } }) as StateOp),
        result: (after) => claimed.map((schedule) => after.schedules.get(schedule.id)!),
      };
    });
  }

  completeScheduleRun(id: string, owner: string, nextRunAt: Date, claimedNextRunAt?: string, claimed?: Omit<ScheduleRecord, "lease">): Promise<void> {
    return this.mutate((tables) => {
      // Checked before any op is made: a refused time leaves the holder its lease.
      const operation = `completeScheduleRun(schedule "${id}")`;
      const next = checkedDate(operation, "nextRunAt", nextRunAt);
      const claimedTime = claimedNextRunAt === undefined ? undefined : checkedTimeText(operation, "claimedNextRunAt", claimedNextRunAt);
      checkScheduleClaimed(operation, id, claimed);
      const schedule = tables.schedules.get(id);
      if (!schedule || schedule.lease?.owner !== owner) return { ops: [], result: () => undefined };
      // An edit made while the row was dispatched is kept: only the lease goes.
      const moved = (claimedTime === undefined || Date.parse(schedule.nextRunAt) === claimedTime) && (claimed === undefined || isSameSchedule(schedule, claimed));
      return {
        ops: [{ op: "schedule.put", schedule: { ...schedule, lease: null, nextRunAt: moved ? next : schedule.nextRunAt } }],
        result: () => undefined,
      };
    });
  }

  deleteSchedule(id: string): Promise<void> {
    return this.mutate((tables) => ({ ops: tables.schedules.has(id) ? [{ op: "schedule.delete", id }] : [], result: () => undefined }));
  }

  // ---- files -----------------------------------------------------------------

  putFileRecord(record: FileRecord): Promise<void> {
    return this.mutate(() => {
      checkFileRecord("putFileRecord", record);
      return { ops: [{ op: "file.put", record }], result: () => undefined };
    });
  }

  getFileRecord(path: string): Promise<FileRecord | undefined> {
    return this.read((tables) => tables.files.get(path), { onlyFrom: "file" });
  }

  listFileRecords(options: FileListOptions = {}): Promise<FileRecord[]> {
    return this.read((tables) => tables.files.list(options), { onlyFrom: "file" });
  }

  firstFileRecords(options: FileListOptions, limit: number): Promise<FileRecordPage> {
    return this.read((tables) => tables.files.page(options, limit, "firstFileRecords"), { onlyFrom: "file" });
  }

  deleteFileRecord(path: string): Promise<void> {
    return this.mutate((tables) => ({ ops: tables.files.has(path) ? [{ op: "file.delete", path }] : [], result: () => undefined }));
  }

  // ---- usage -----------------------------------------------------------------

  recordUsage(record: UsageRecord): Promise<void> {
    return this.mutate((tables) => {
      // Kept with createdAt as an ISO UTC time, as PostgreSQL keeps it.
      const checked = checkedUsageRecord("recordUsage", record);
      return { ops: tables.usage.has(checked.id) ? [] : [{ op: "usage.put", record: checked }], result: () => undefined };
    });
  }

  listUsage(filter: UsageFilter): Promise<UsageRecord[]> {
    return this.read((tables) => tables.usage.list(filter));
  }

  // ---- sandbox sessions ------------------------------------------------------

  getSandboxSession(key: string): Promise<SandboxSessionRecord | undefined> {
    return this.read((tables) => tables.sandboxSessions.get(key));
  }

  putSandboxSession(record: SandboxSessionRecord): Promise<void> {
    return this.mutate(() => {
      // JSON would drop the field: the session would read back without its data.
      definedStateValue(`putSandboxSession(key "${record.key}")`, "record.data", record.data);
      return { ops: [{ op: "sandboxSession.put", record }], result: () => undefined };
    });
  }

  deleteSandboxSession(key: string): Promise<void> {
    return this.mutate((tables) => ({
      ops: tables.sandboxSessions.has(key) ? [{ op: "sandboxSession.delete", key }] : [],
      result: () => undefined,
    }));
  }

  listSandboxSessions(): Promise<SandboxSessionRecord[]> {
    return this.read((tables) => [...tables.sandboxSessions.values()].sort((a, b) => compareCodePoints(a.key, b.key)));
  }

  // ---- memory ----------------------------------------------------------------

  readMemory(path: string): Promise<MemoryRecord | undefined> {
    return this.read((tables) => tables.memory.get(path), { onlyFrom: "memory" });
  }

  writeMemory(path: string, content: string): Promise<void> {
    return this.mutate(() => {
      checkMemoryWrite(path, content);
      return { ops: [{ op: "memory.put", record: { path, content, updatedAt: isoTimestamp() } }], result: () => undefined };
    });
  }

  listMemory(prefix = ""): Promise<string[]> {
    return this.read((tables) => tables.memory.listPaths({ prefix }), { onlyFrom: "memory" });
  }

  listMemoryEntries(prefix = ""): Promise<MemoryEntry[]> {
    return this.read((tables) => tables.memory.entries(prefix), { onlyFrom: "memory" });
  }

  firstMemoryEntries(prefix: string | undefined, limit: number): Promise<MemoryPage> {
    return this.read((tables) => tables.memory.first(prefix ?? "", limit, "firstMemoryEntries"), { onlyFrom: "memory" });
  }

  deleteMemory(path: string): Promise<void> {
    return this.mutate((tables) => ({ ops: tables.memory.has(path) ? [{ op: "memory.delete", path }] : [], result: () => undefined }));
  }

  // ---- skills ----------------------------------------------------------------

  getSkill(agentId: string, name: string): Promise<SkillRecord | undefined> {
    return this.read((tables) => tables.skills.get(skillKey(agentId, name)));
  }

  listSkills(agentId: string): Promise<SkillRecord[]> {
    return this.read((tables) => [...tables.skills.values()].filter((record) => record.agentId === agentId).sort((a, b) => compareCodePoints(a.name, b.name)));
  }

  /** Compare-and-set inside the mutation queue: the check and the write are one step. */
  async putSkill(record: SkillRecord, options: { expectedDigest: string | null }): Promise<boolean> {
    checkSkillRecord(record);
    return this.mutate((tables) => {
      const current = tables.skills.get(skillKey(record.agentId, record.name))?.digest ?? null;
      if (current !== options.expectedDigest) return { ops: [], result: () => false };
      return { ops: [{ op: "skill.put", record }], result: () => true };
    });
  }

  async deleteSkill(agentId: string, name: string, options: { expectedDigest: string }): Promise<boolean> {
    checkSkillKey(agentId, name, "deleteSkill");
    return this.mutate((tables) => {
      if (tables.skills.get(skillKey(agentId, name))?.digest !== options.expectedDigest) return { ops: [], result: () => false };
      return { ops: [{ op: "skill.delete", agentId, name }], result: () => true };
    });
  }

  // ---- settings --------------------------------------------------------------

  getSetting(key: string): Promise<JsonValue | undefined> {
    return this.read((tables) => tables.settings.get(key));
  }

  putSetting(key: string, value: JsonValue, audit: { actor: string; reason?: string }): Promise<SettingAuditEvent> {
    return this.mutate((tables) => {
      checkSettingWrite(`putSetting(key "${key}")`, key, value, audit);
      const event: SettingAuditEvent = {
        id: randomUUID(),
        key,
        value,
        previous: tables.settings.get(key) ?? null,
        actor: audit.actor,
        reason: audit.reason ?? null,
        createdAt: isoTimestamp(),
      };
      return { ops: [{ op: "setting.put", audit: event }], result: (after) => after.settingAudit[after.settingAudit.length - 1]! };
    });
  }

  listSettingAudit(options: { key?: string; limit?: number } = {}): Promise<SettingAuditEvent[]> {
    return this.read((tables) => {
      if (options.limit !== undefined) checkListLimit(options.limit, "listSettingAudit");
      const newestFirst = tables.settingAudit.filter((event) => options.key === undefined || event.key === options.key).reverse();
      return newestFirst.slice(0, options.limit);
    });
  }

  // ---- internals -------------------------------------------------------------

  /**
   * Answer from the tables as they are now, but only once every write they include
   * is durable: nobody sees a record a crash could still take back.
   */
  private async read<T>(query: (tables: StateTables) => T, options: ReadOptions = {}): Promise<T> {
    // Answered a turn after the call, not at once: the sync it starts (syncSoon) then takes the records appended
    // later in the same turn too, instead of leaving them for the next batch (measured: smaller batches, slower).
    await this.ready();
    this.throwIfUnusable();
    const found = query(this.tables);
    // A fresh answer (events parsed from their texts) is the caller's own already.
    const answer = options.fresh ? found : copy(found);
    // Log order is durability order: the last write the query could have seen covers every earlier one.
    const seen = options.onlyFrom === undefined ? this.durable : this.lastWriteTo[options.onlyFrom];
    // A lazily appended record it saw goes to disk now, not when its batch would have.
    this.log?.syncSoon();
    return this.answerWhenDurable({ answer, durable: seen });
  }

  /**
   * Plan against the current tables, append the plan as one log record, apply it,
   * and answer once the record is durable. Plans run one at a time in call order, so
   * a plan never sees a half-applied one; the next plan does not wait for this
   * record's fdatasync, so records that arrive during one fdatasync share the next
   * (group commit, see WriteAheadLog). The caller still gets its answer only after
   * its record is on disk, and a read answers only after what it saw is on disk.
   */
  private mutate<T>(plan: (tables: StateTables) => Plan<T>, options: { lazy?: boolean } = {}): Promise<T> {
    const lazy = options.lazy ?? false;
    if (this.queued === 0 && this.log !== undefined && this.log.failed === undefined && !this.closing) {
      // Open, and no plan waits or runs: this one runs now, as the queue would have run it next.
      let applied: { answer: T; durable: Promise<void> };
      try {
        applied = this.applyPlan(plan, lazy);
      } catch (error) {
        return Promise.reject(error);
      }
      // A failed cut leaves the log as it was (see startCompaction); the next write tries again.
      if (this.shouldCompact()) this.enqueue(() => this.startCompaction()).catch(() => undefined);
      return lazy ? Promise.resolve(applied.answer) : this.answerWhenDurable(applied);
    }
    // Checked at call time, so calls made before close() still complete.
    const ready = this.ready();
    ready.catch(() => undefined);
    const next = this.enqueue(async () => {
      await ready;
      // The log failed after this call was made: the folder is replayed first (or the call fails).
      if (this.log?.failed) await this.recover();
      const applied = this.applyPlan(plan, lazy);
      if (this.shouldCompact()) await this.startCompaction();
      return applied;
    });
    // A lazy write is answered at once; its failure still fails every later call.
    return next.then((applied) => (lazy ? applied.answer : this.answerWhenDurable(applied)));
  }

  /** Run `task` after every task queued before it; the queue counts it until it settles. */
  private enqueue<R>(task: () => Promise<R>): Promise<R> {
    this.queued += 1;
    const run = () => task().finally(() => (this.queued -= 1));
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * Plan against the current tables, append the plan's record to the log and apply it: all
   * in one synchronous section, so no other plan or read sees the tables in between.
   */
  private applyPlan<T>(plan: (tables: StateTables) => Plan<T>, lazy: boolean): { answer: T; durable: Promise<void> } {
    this.throwIfUnusable();
    const { ops, result, fresh = false } = plan(this.tables);
    const answerOf = (tables: StateTables) => (fresh ? result(tables) : copy(result(tables)));
    if (ops.length === 0) return { answer: answerOf(this.tables), durable: this.durable };
    const { json, opBytes, applied } = this.encode(ops);
    const durable = lazy ? this.log!.appendLazily(json) : this.log!.append(json);
    durable.catch(() => undefined);
    for (let index = 0; index < applied.length; index += 1) this.supersededBytes += this.tables.apply(applied[index]!, opBytes[index]!);
    this.durable = durable;
    for (const op of ops) {
      const table = separateTableOf(op);
      if (table) this.lastWriteTo[table] = durable;
    }
    return { answer: answerOf(this.tables), durable };
  }

  /** `answer` once `durable` resolves; a failed log write becomes the adapter's error. */
  private answerWhenDurable<T>({ answer, durable }: { answer: T; durable: Promise<void> }): Promise<T> {
    return durable.then(
      () => answer,
      (error: unknown) => {
        // A batch refused because the lock was lost (see writableWhileHeld) was never written: no disk failed.
        throw isAssemblyLineError(error, "AL_ERR_STATE_LOCKED") ? error : this.logFailedError(error);
      },
    );
  }

  /**
   * After a failed log write the tables hold records the disk may not: nothing is read from
   * them or planned against them until `recover` replaced them with what the disk holds. Nor
   * after another process took the folder's lock over: checked now (FolderLock.heldLately), as
   * the tables of a holder frozen past the takeover are stale, and a read or a write that changes
   * nothing never reaches the log's own check.
   */
  private throwIfUnusable(): void {
    if (this.lock && !this.lock.heldLately()) throw this.lock.lostError();
    const failure = this.log?.failed;
    if (failure) throw this.logFailedError(failure);
  }

  /**
   * After a failed log write: close the log, cut it back to its last synced record (what failed was
   * never acknowledged, whatever of it reached the disk), and replay the folder into fresh tables, as
   * opening it does; the tables held the failed records, which the replay drops. The lock stays held.
   * Tried at most once per RECOVERY_INTERVAL_MS after the last try ended; a call that finds none
   * allowed, or whose try fails (the disk is still full), fails with AL_ERR_STATE_UNAVAILABLE, and a
   * later call tries again. Calls wait for a try in progress.
   */
  private recover(): Promise<void> {
    if (this.recovering) return this.recovering;
    const failed = this.log!;
    const failure = failed.failed!;
    if (performance.now() - this.recoveredAt < RECOVERY_INTERVAL_MS) return Promise.reject(this.logFailedError(failure));
    this.recovering = (async () => {
      try {
        // A snapshot being written holds only records synced before the failure; it is let finish, or the replay would race its renames.
        await this.compaction;
        await failed.close().catch(() => undefined);
        this.throwIfLockLost(this.lock!);
        await cutFile(failed.path, failed.syncedBytes);
        const { tables, generation, log, earlierLogBytes } = await this.replay(this.lock!);
        this.tables = tables;
        this.generation = generation;
        this.log = log;
        this.supersededBytes = 0;
        this.unfoldedLogBytes = earlierLogBytes;
        this.durable = Promise.resolve();
        this.lastWriteTo.memory = this.durable;
        this.lastWriteTo.file = this.durable;
      } catch (error) {
        if (isAssemblyLineError(error, "AL_ERR_STATE_LOCKED")) throw error;
        throw this.logFailedError(failure, error);
      } finally {
        this.recovering = undefined;
        this.recoveredAt = performance.now();
      }
    })();
    return this.recovering;
  }

  /** Throw the lost-lock error unless this process still holds the folder's lock (checked now: one fstat). */
  private throwIfLockLost(lock: FolderLock): void {
    if (!lock.stillHeld()) throw lock.lostError();
  }

  /** The log's check before each write: the lost-lock error once `lock` is no longer this process's. */
  private writableWhileHeld(lock: FolderLock): () => Error | undefined {
    return () => (lock.stillHeld() ? undefined : lock.lostError());
  }

  private logFailedError(failure: unknown, recoveryFailure?: unknown): AssemblyLineError {
    const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));
    const recovery = recoveryFailure === undefined ? "" : `, and reading the folder back to go on failed too: ${reason(recoveryFailure)}`;
    return new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", `a write to the state log in ${this.directory} failed: ${reason(failure)}${recovery}`, {
      fix: `Check the disk (space, permissions, health). The calls not answered before the failure were not recorded; the adapter reads the folder back and goes on by itself on a later call (tried at most once a second), so retry the call once the disk takes writes again. The records acknowledged before the failure are intact.`,
      details: { directory: this.directory },
      cause: recoveryFailure ?? failure,
    });
  }

  /**
   * The record's JSON, each op's share of it (what StateTables.apply weighs superseded records
   * by), and the ops to apply: memory holds exactly what a replay would rebuild. Events, tool
   * calls and steps are kept as the very texts the record is made of; every other op as its
   * JSON-exact copy, or else parsed back from its JSON.
   */
  private encode(ops: StateOp[]): { json: string; opBytes: number[]; applied: AppliedOp[] } {
    // The record is joined once, from every piece: a flat string, which the log encodes without flattening it again.
    const pieces: string[] = ['{"ops":['];
    const opBytes: number[] = [];
    const applied: AppliedOp[] = [];
    let json: string;
    try {
      const push = (piece: string, bytes: number, op: AppliedOp) => {
        pieces.push(piece);
        opBytes.push(bytes);
        applied.push(op);
      };
      for (const op of ops) {
        if (pieces.length > 1) pieces.push(",");
        if (op.op === "events.append" && op.createdAt !== undefined) {
          const texts = op.events.map(loggedEventText);
          const head = `{"op":"events.append","runId":${JSON.stringify(op.runId)},"createdAt":${JSON.stringify(op.createdAt)},"events":[`;
          let bytes = head.length + texts.length + 1;
          pieces.push(head);
          for (let index = 0; index < texts.length; index += 1) {
            if (index > 0) pieces.push(",");
            pieces.push(texts[index]!);
            bytes += texts[index]!.length;
          }
          pieces.push("]}");
          opBytes.push(bytes);
          applied.push({ op: "events.appendTexts", runId: op.runId, createdAt: op.createdAt, texts });
          continue;
        }
        if (op.op === "toolCall.put") {
          const text = flatJson(op.call);
          const piece = `{"op":"toolCall.put","call":${text}}`;
          push(piece, piece.length, { op: "toolCall.putText", runId: op.call.runId, callId: op.call.callId, text });
          continue;
        }
        if (op.op === "step.put") {
          const text = flatJson(op.step);
          const piece = `{"op":"step.put","step":${text}}`;
          push(piece, piece.length, { op: "step.putText", runId: op.step.runId, key: op.step.key, text });
          continue;
        }
        const exact = jsonExactCopy(op);
        const part = JSON.stringify(exact ?? op);
        push(part, part.length, exact ?? (JSON.parse(part) as StateOp));
      }
      pieces.push("]}");
      json = pieces.join("");
    } catch (error) {
      // Longer than the longest string Node.js makes: the op being encoded outgrew it, or else (the join did) the largest.
      if (error instanceof RangeError && /string length/i.test(error.message)) {
        throw this.recordTooLargeError(ops[opBytes.length < ops.length ? opBytes.length : indexOfLargest(opBytes)]!, undefined, error);
      }
      throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `a value written to the state in ${this.directory} is not JSON`, {
        fix: "Store only JSON values (no BigInt, no cycles); convert dates and buffers to strings first.",
        cause: error,
      });
    }
    // A UTF-16 unit is at most 3 UTF-8 bytes: only a record that may be over the limit is measured.
    if (json.length * 3 > lineLimits.recordBytes) {
      const bytes = Buffer.byteLength(json, "utf8");
      if (bytes > lineLimits.recordBytes) throw this.recordTooLargeError(ops[indexOfLargest(opBytes)]!, bytes);
    }
    return { json, opBytes, applied };
  }

  /**
   * A call's record over `lineLimits.recordBytes` (`bytes` of JSON, or longer than any string), refused before
   * anything is written: a longer line could not be read back, and a snapshot row that holds it neither.
   */
  private recordTooLargeError(largest: StateOp, bytes: number | undefined, cause?: unknown): AssemblyLineError {
    const limit = lineLimits.recordBytes;
    const size = bytes === undefined ? `more than ${constants.MAX_STRING_LENGTH} characters of JSON (the longest string Node.js makes)` : `${bytes} bytes of JSON (UTF-8)`;
    return new AssemblyLineError(
      "AL_ERR_STATE_INPUT_INVALID",
      `a write to the state in ${this.directory} is too large: its record is ${size}, over the file state's limit of ${limit} bytes for one write (the largest part: ${describeOp(largest)}); nothing was written`,
      {
        fix: `Keep large data out of the state: put it in blob storage or a file and store its key or path (an event's data, a tool's output, a run's input or output, a memory file, a setting). One call's writes must stay under ${limit} bytes of JSON.`,
        cause,
        details: { directory: this.directory, bytes, limit, op: largest.op },
      },
    );
  }

  private async ready(): Promise<void> {
    if (this.closing) throw this.closedError();
    await this.open();
    // Nothing is cut or replayed in a folder another process writes now. Only the flag here: a call
    // checks the lock itself right before it reads or plans (throwIfUnusable), and recover before it cuts.
    if (this.lock?.lost) throw this.lock.lostError();
    if (this.log?.failed || this.recovering) await this.recover();
  }

  private closedError(): AssemblyLineError {
    return new AssemblyLineError("AL_ERR_STATE_LOCKED", `the FileStateAdapter for ${this.directory} was closed and no longer holds its lock`, {
      fix: "Create a new FileStateAdapter for the folder; do not use one after close().",
      details: { directory: this.directory },
    });
  }

  private requireRun(tables: StateTables, runId: string) {
    const entry = tables.runs.get(runId);
    if (entry) return entry;
    // The folder is in `details` only: the Node host answers this message to HTTP callers (a 404).
    throw new AssemblyLineError("AL_ERR_RUN_NOT_FOUND", `no run with id "${runId}" exists in the file state`, {
      fix: "Create the run with createRun before writing to it, and check the run id.",
      details: { runId, directory: this.directory },
    });
  }

  private async load(): Promise<void> {
    await mkdir(this.directory, { recursive: true });
    const lock = await FolderLock.acquire(this.directory);
    try {
      const { tables, first, generation, log, earlierLogBytes } = await this.replay(lock);
      this.tables = tables;
      this.generation = generation;
      this.log = log;
      this.lock = lock;
      this.orphanedLeases = new Map([...tables.runs.values()].flatMap(({ record }) => (record.lease ? [[record.id, record.lease.token] as [string, number]] : [])));
      this.unfoldedLogBytes = earlierLogBytes;
      // Fold what a cut-short compaction left (or an outgrown log) before the first call.
      if (generation > first || this.shouldCompact()) await this.foldAtOpen(lock);
    } catch (error) {
      await this.log?.close().catch(() => undefined);
      this.log = undefined;
      await lock.release();
      throw error;
    }
  }

  /**
   * The folder as the disk holds it: the snapshot and every log after it replayed into fresh
   * tables, and the last log opened for appending, cut after its last intact record.
   */
  private async replay(lock: FolderLock): Promise<{ tables: StateTables; first: number; generation: number; log: WriteAheadLog; earlierLogBytes: number }> {
    const snapshot = await this.readSnapshot();
    const tables = snapshot?.tables ?? new StateTables();
    const first = snapshot?.generation ?? 0;
    const logs = await this.logGenerations();
    // The snapshot's log, then each later one: a compaction a crash cut short left them.
    let generation = first;
    let validBytes: number;
    let earlierLogBytes = 0;
    for (;;) {
      const logPath = join(this.directory, logFile(generation));
      // A log is made before any later one and deleted only with the logs before it: one missing before another lost records.
      if (!logs.has(generation) && logs.has(generation + 1)) throw this.corruptError(logPath, new Error("the log is missing, and a later one is there"));
      const read = await WriteAheadLog.read(logPath, (record) => {
        try {
          for (const op of (record as { ops: StateOp[] }).ops) tables.apply(op);
        } catch (error) {
          throw this.corruptError(logPath, error);
        }
      });
      validBytes = read.validBytes;
      // Records synced after the damaged one would go with a cut there: the log is refused instead.
      if (read.laterWriteAt !== undefined) throw this.damagedLogError(logPath, read.validBytes, read.laterWriteAt);
      if (!logs.has(generation + 1)) break;
      // Only the last log can end in a torn record: an earlier one was durable before the next began.
      if (read.validBytes < read.totalBytes) throw this.corruptError(logPath, new Error("a torn record in a log that a later log follows"));
      earlierLogBytes += read.validBytes;
      generation += 1;
    }
    const beyond = [...logs].find((found) => found > generation);
    if (beyond !== undefined) throw this.corruptError(join(this.directory, logFile(beyond)), new Error(`log ${logFile(generation + 1)} is missing before it`));
    const log = await WriteAheadLog.openForAppend(join(this.directory, logFile(generation)), validBytes, this.writableWhileHeld(lock));
    try {
      await this.syncFolderAtOpen();
      await this.removeStrayFiles(first);
    } catch (error) {
      await log.close().catch(() => undefined);
      throw error;
    }
    return { tables, first, generation, log, earlierLogBytes };
  }

  private shouldCompact(): boolean {
    if (this.compaction !== undefined || this.log === undefined || this.log.failed !== undefined) return false;
    const logBytes = this.log.bytes;
    return (
      logBytes > Math.max(this.compactAfterBytes, this.snapshotBytes, this.foldRetryAtLogBytes) &&
      this.supersededBytes >= this.compactWhenSuperseded * (this.snapshotBytes + logBytes)
    );
  }

  /** The generations of the log files in the folder. */
  private async logGenerations(): Promise<Set<number>> {
    const generations = new Set<number>();
    for (const name of await readdir(this.directory)) {
      const generation = logGeneration(name);
      if (generation !== undefined) generations.add(generation);
    }
    return generations;
  }

  /** The snapshot, if the folder has one, in either format (see SNAPSHOT_FORMAT). */
  private async readSnapshot(): Promise<ReadSnapshot | undefined> {
    const path = join(this.directory, SNAPSHOT_FILE);
    let handle: FileHandle;
    try {
      handle = await open(path, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    try {
      const first = Buffer.alloc(1);
      await handle.read(first, 0, 1, 0);
      return first[0] === 0x7b ? await this.readLegacySnapshot(path, handle) : await this.readSnapshotLines(path, handle);
    } finally {
      await handle.close();
    }
  }

  /** A snapshot of SNAPSHOT_FORMAT: its lines read in turn, each row held as it is read. */
  private async readSnapshotLines(path: string, handle: FileHandle): Promise<ReadSnapshot> {
    const tables = new StateTables();
    let generation: number | undefined;
    let rows = 0;
    let end: unknown;
    const onRecord = (record: unknown) => {
      if (generation === undefined) {
        const header = record as { format?: unknown; generation?: unknown } | null;
        if (header?.format !== SNAPSHOT_FORMAT || !Number.isInteger(header.generation)) throw new TypeError(`snapshot format ${JSON.stringify(header?.format)} is not ${SNAPSHOT_FORMAT}`);
        generation = header.generation as number;
        return;
      }
      if (end !== undefined) throw new TypeError("the snapshot has rows after its end");
      if (!Array.isArray(record) || record.length !== 2) throw new TypeError("a snapshot row is not [table, row]");
      const [table, row] = record as [unknown, unknown];
      if (table === "end") end = row;
      else if (StateTables.isSnapshotTable(table)) {
        tables.addSnapshotRow(table, row as never);
        rows += 1;
      } else if (StateTables.isSnapshotPart(table)) {
        tables.addSnapshotPart(table, row as never);
        rows += 1;
      } else throw new TypeError(`the snapshot names no table ${JSON.stringify(table)}`);
    };
    let read: { validBytes: number; totalBytes: number };
    try {
      read = await WriteAheadLog.readFrom(handle, onRecord);
    } catch (error) {
      // A read that failed is the disk's error; anything else is the text's.
      if ((error as NodeJS.ErrnoException).syscall !== undefined) throw error;
      throw this.corruptError(path, error);
    }
    // Written whole before it was renamed into place: a snapshot that ends early was damaged since.
    if (read.validBytes < read.totalBytes) throw this.corruptError(path, new Error(`a damaged line at byte ${read.validBytes}`));
    if (end === undefined) throw this.corruptError(path, new Error(`the snapshot ends after ${rows} rows, without its end line`));
    if (end !== rows) throw this.corruptError(path, new Error(`the snapshot's end line counts ${JSON.stringify(end)} rows, but it holds ${rows}`));
    this.snapshotBytes = read.validBytes;
    return { generation: generation!, tables };
  }

  /**
   * A snapshot of format 1, read whole as text while that fits in one string, else parsed as it is
   * read, a piece at a time: one grown past 512 MiB is longer than the longest string Node.js can
   * make, and reading it whole would fail, and with it the opening of the folder.
   */
  private async readLegacySnapshot(path: string, handle: FileHandle): Promise<ReadSnapshot> {
    const { size } = await handle.stat();
    let parsed: LegacySnapshotFile;
    try {
      // UTF-8 text never decodes to more characters than it has bytes.
      if (size <= constants.MAX_STRING_LENGTH) parsed = JSON.parse(await handle.readFile("utf8")) as LegacySnapshotFile;
      else {
        // Loaded for this alone: no other read needs it, and a process that opens a folder loads it no more.
        const { parseChunked } = await import("@discoveryjs/json-ext");
        parsed = (await parseChunked(handle.createReadStream({ autoClose: false, start: 0 }))) as LegacySnapshotFile;
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).syscall !== undefined) throw error;
      throw this.corruptError(path, error);
    }
    if (typeof parsed !== "object" || parsed === null || parsed.format !== LEGACY_SNAPSHOT_FORMAT || !Number.isInteger(parsed.generation) || typeof parsed.tables !== "object") {
      throw this.corruptError(path, new TypeError(`snapshot format ${String((parsed as Partial<LegacySnapshotFile> | null)?.format)} is not ${LEGACY_SNAPSHOT_FORMAT}`));
    }
    let tables: StateTables;
    try {
      tables = StateTables.fromSnapshot(parsed.tables);
    } catch (error) {
      throw this.corruptError(path, error);
    }
    this.snapshotBytes = size;
    return { generation: parsed.generation, tables };
  }

  /**
   * Start log N+1 and write the tables as they are now as snapshot N+1 in the
   * background (see the design note). Runs inside a mutation, so no write lands
   * between the cut and the tables it captures.
   */
  private async startCompaction(): Promise<void> {
    // A record in log N+1 may depend on one in log N: log N is wholly on disk first.
    this.log!.syncSoon();
    await this.answerWhenDurable({ answer: undefined, durable: this.durable });
    const next = this.generation + 1;
    const lock = this.lock!;
    this.throwIfLockLost(lock);
    let log: WriteAheadLog | undefined;
    try {
      log = await WriteAheadLog.openForAppend(join(this.directory, logFile(next)), 0, this.writableWhileHeld(lock));
      await syncDirectory(this.directory);
    } catch (error) {
      // The write that got here is durable and stands; writes go on in log N, and a later one tries again.
      await log?.close().catch(() => undefined);
      if (!isAssemblyLineError(error, "AL_ERR_STATE_LOCKED")) this.foldFailed(error, this.unfoldedLogBytes + this.log!.bytes);
      return;
    }
    const tables = this.tables.toSnapshot();
    // The snapshot holds only what is live now: what later writes supersede is counted afresh.
    const superseded = this.supersededBytes;
    this.supersededBytes = 0;
    const previous = this.log!;
    this.log = log;
    this.generation = next;
    this.unfoldedLogBytes += previous.bytes;
    this.compaction = this.foldInBackground(next, tables, previous, lock, superseded).finally(() => {
      this.compaction = undefined;
    });
  }

  /**
   * Replace the snapshot with `tables` as generation `generation`, then delete the
   * logs it folds in. On failure (a full disk, a line too long) nothing is lost: the
   * old snapshot and every log after it stay, the failure is reported (see foldFailed),
   * and a later write tries again.
   */
  private async foldInBackground(generation: number, tables: TablesCut, previous: WriteAheadLog, lock: FolderLock, superseded: number): Promise<void> {
    await previous.close().catch(() => undefined);
    // Checked before each step that changes the folder: a snapshot renamed over the new holder's, or its logs removed, would lose its records.
    if (!lock.stillHeld()) return;
    let replaced: ReplacedSnapshot;
    try {
      replaced = await this.replaceSnapshot(generation, tables, lock);
    } catch (error) {
      // A lost lock is every later call's error already.
      if (isAssemblyLineError(error, "AL_ERR_STATE_LOCKED")) return;
      // The records the cut counted as superseded are still in the folder, to be folded next time.
      this.supersededBytes += superseded;
      this.foldFailed(error, this.unfoldedLogBytes);
      return;
    }
    // The snapshot is in place: the fold is done, even where the folder's sync failed.
    this.snapshotBytes = replaced.bytes;
    this.unfoldedLogBytes = 0;
    this.foldRetryAtLogBytes = 0;
    // Until a sync of the folder succeeds, a crash may bring the old snapshot back, which needs the logs after it.
    let syncFailure: unknown;
    const synced = replaced.folderSynced || (await syncDirectory(this.directory).then(() => true, (error: unknown) => ((syncFailure = error), false)));
    if (!synced) this.folderNotSynced(syncFailure);
    // A log left behind is removed when the folder is next opened.
    if (synced && lock.stillHeld()) await this.removeStrayFiles(generation).catch(() => undefined);
  }

  /**
   * On opening, before any call: write the tables as snapshot N+1, and only once it is in place start
   * log N+1 and delete the logs it holds. No log is begun for a fold that fails (see foldFailed): each
   * opening of a folder that cannot be folded would otherwise leave one more log behind.
   */
  private async foldAtOpen(lock: FolderLock): Promise<void> {
    const next = this.generation + 1;
    let replaced: ReplacedSnapshot;
    try {
      replaced = await this.replaceSnapshot(next, this.tables.toSnapshot(), lock);
    } catch (error) {
      if (isAssemblyLineError(error, "AL_ERR_STATE_LOCKED")) throw error;
      this.foldFailed(error, this.unfoldedLogBytes + this.log!.bytes);
      return;
    }
    // Snapshot N+1 is in place, also where the folder's sync after it failed: no write may go into log N
    // any more, which the next opening deletes as folded. Snapshot N+1 holds every log, and no log N+1 is
    // there yet: replayed now, the folder reads the same.
    await this.log!.close();
    this.log = await WriteAheadLog.openForAppend(join(this.directory, logFile(next)), 0, this.writableWhileHeld(lock));
    this.generation = next;
    // Makes log N+1 durable, and the rename too where the sync after it failed; failing again, it fails the
    // opening (the logs stay, and the folder reads the same at the next).
    await this.syncFolderAtOpen();
    this.snapshotBytes = replaced.bytes;
    this.supersededBytes = 0;
    this.unfoldedLogBytes = 0;
    this.foldRetryAtLogBytes = 0;
    await this.removeStrayFiles(next);
  }

  /**
   * Write `tables` as the snapshot of generation `generation` (write-temp, fsync, rename, fsync the folder). It
   * throws only before the rename: the temp file is removed and the snapshot in place stays as it was. Once
   * renamed, the new snapshot is in place and it returns, also where the folder's sync failed (see ReplacedSnapshot).
   */
  private async replaceSnapshot(generation: number, tables: TablesCut, lock: FolderLock): Promise<ReplacedSnapshot> {
    // Named by the lock's token, not the pid: a holder in another pid namespace often has this one's pid,
    // and one frozen mid-snapshot that wakes must not write into the file the new holder renames into place.
    const temp = join(this.directory, `${SNAPSHOT_FILE}.${lock.token}.tmp`);
    let bytes: number;
    try {
      const handle = await open(temp, "w");
      try {
        bytes = await writeSnapshotFile(handle, generation, tables);
        await handle.sync();
      } finally {
        await handle.close();
      }
      if (!lock.stillHeld()) throw lock.lostError();
      await rename(temp, join(this.directory, SNAPSHOT_FILE));
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw error;
    }
    const folderSynced = await syncDirectory(this.directory).then(() => true, () => false);
    return { bytes, folderSynced };
  }

  /**
   * Report a fold that failed (`attempted`: the bytes of the logs it would have folded) as a process warning, since
   * no call failed, and put the next try off until the current log has grown by as much: a folder that cannot be
   * folded (a full disk, a run's record too long for a line) is not rewritten after every write, and each try
   * costs no more than the writes since the last.
   */
  private foldFailed(error: unknown, attempted: number): void {
    const logBytes = this.log?.bytes ?? 0;
    this.foldRetryAtLogBytes = logBytes + attempted;
    const reason = error instanceof Error ? error.message : String(error);
    process.emitWarning(
      new AssemblyLineError("AL_ERR_STATE_COMPACTION", `the state log in ${this.directory} could not be folded into a new snapshot: ${reason}`, {
        fix: `Nothing was lost: the snapshot and every log stay, and the fold is tried again once the log has grown by ${attempted} bytes, or when the folder is opened again. If the disk is full, free space; if a line is too long, the message names the run or table: keep large data in blob storage or files and store its key.`,
        cause: error,
        details: { directory: this.directory, retryAtLogBytes: this.foldRetryAtLogBytes },
      }),
    );
  }

  /** Sync the folder while opening it: a failure fails the opening, named for what it is. */
  private async syncFolderAtOpen(): Promise<void> {
    try {
      await syncDirectory(this.directory);
    } catch (error) {
      throw new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", `the local state folder ${this.directory} could not be synced while opening it: ${error instanceof Error ? error.message : String(error)}`, {
        fix: `Check the disk (space, permissions, health), then open the folder again: nothing was lost, and it reads the same at the next opening.`,
        cause: error,
        details: { directory: this.directory },
      });
    }
  }

  /**
   * Report a background fold whose snapshot is in place but whose folder could not be synced twice: no call failed,
   * but the disk did, and the logs the fold holds stay until the folder is next opened.
   */
  private folderNotSynced(error: unknown): void {
    const reason = error instanceof Error ? error.message : String(error);
    process.emitWarning(
      new AssemblyLineError("AL_ERR_STATE_COMPACTION", `the state folder ${this.directory} could not be synced after its log was folded into a new snapshot: ${reason}`, {
        fix: "Nothing was lost: the logs the new snapshot holds stay until the folder is next opened, which removes them. Check the disk (space, permissions, health).",
        cause: error,
        details: { directory: this.directory },
      }),
    );
  }

  /** Logs the snapshot at `generation` holds (once it replaced the old one, or left by a crash mid-compaction), and snapshot temp files of writers that died. */
  private async removeStrayFiles(generation: number): Promise<void> {
    for (const name of await readdir(this.directory)) {
      const log = logGeneration(name);
      const stray = (log !== undefined && log < generation) || /^snapshot\.json\..*\.tmp$/.test(name);
      if (stray) await unlink(join(this.directory, name)).catch(() => undefined);
    }
  }

  /** A log damaged at `damagedAt`, with records a later synced write made from `laterWriteAt` on. */
  private damagedLogError(path: string, damagedAt: number, laterWriteAt: number): AssemblyLineError {
    return new AssemblyLineError(
      "AL_ERR_STATE_ROW_INVALID",
      `the local state file ${path} cannot be read back: the record at byte ${damagedAt} is damaged, and records written after it was on disk follow from byte ${laterWriteAt}`,
      {
        fix: `The file was changed outside Assembly Line or damaged on disk; nothing was cut from it. Restore ${this.directory} from a backup. To keep only the records before the damage instead, cut the file to ${damagedAt} bytes (truncate -s ${damagedAt} ${path}): the records after it are then lost.`,
        details: { path, damagedAt, laterWriteAt },
      },
    );
  }

  private corruptError(path: string, cause: unknown): AssemblyLineError {
    const reason = cause instanceof Error ? cause.message : String(cause);
    return new AssemblyLineError("AL_ERR_STATE_ROW_INVALID", `the local state file ${path} cannot be read back: ${reason}`, {
      fix: `The file was changed outside Assembly Line or damaged. Restore ${this.directory} from a backup, or move it away to start with empty state.`,
      cause,
      details: { path },
    });
  }
}

/**
 * A snapshot renamed into place: its `bytes`, and whether the folder's sync after the rename succeeded. Where it
 * failed, a crash may still bring the old snapshot back, so the logs after it stay until a later sync succeeds.
 */
interface ReplacedSnapshot {
  bytes: number;
  folderSynced: boolean;
}

/** Cut the file at `path` to `bytes`, and sync it. */
async function cutFile(path: string, bytes: number): Promise<void> {
  const handle = await open(path, "r+");
  try {
    await handle.truncate(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** How many snapshot bytes are written at a time: other calls run between the pieces. */
const SNAPSHOT_CHUNK_BYTES = 1 << 20;
/** The bytes of a line around its JSON: the checksum, a space, the newline. */
const LINE_FRAME_BYTES = 10;

/** The row of `table` a snapshot line holds, for a message: a run's or conversation's by its id. */
function describeRow(table: SnapshotTable, row: unknown): string {
  if (table === "runs") return `run ${JSON.stringify((row as { record: RunRecord }).record.id)}`;
  if (table === "conversations") return `conversation ${JSON.stringify((row as [string, unknown])[0])}`;
  return `a row of table ${table}`;
}

/** The index of the largest of `sizes` (not spread into Math.max: a call may make more ops than a call takes arguments). */
function indexOfLargest(sizes: number[]): number {
  let largest = 0;
  for (let index = 1; index < sizes.length; index += 1) if (sizes[index]! > sizes[largest]!) largest = index;
  return largest;
}

/** A state op, for a message: what it writes and to which run, path or key. */
function describeOp(op: StateOp): string {
  const target =
    "runId" in op ? `run ${JSON.stringify(op.runId)}`
    : "run" in op ? `run ${JSON.stringify(op.run.id)}`
    : op.op === "toolCall.put" ? `run ${JSON.stringify(op.call.runId)}, tool call ${JSON.stringify(op.call.callId)}`
    : op.op === "step.put" ? `run ${JSON.stringify(op.step.runId)}, step ${JSON.stringify(op.step.key)}`
    : op.op === "delivery.put" ? `run ${JSON.stringify(op.delivery.runId)}, delivery ${JSON.stringify(op.delivery.id)}`
    : op.op === "conversation.append" ? `conversation ${JSON.stringify(op.conversationId)}`
    : op.op === "schedule.put" ? `schedule ${JSON.stringify(op.schedule.id)}`
    : op.op === "file.put" || op.op === "memory.put" ? `path ${JSON.stringify(op.record.path)}`
    : op.op === "sandboxSession.put" ? `sandbox session ${JSON.stringify(op.record.key)}`
    : op.op === "setting.put" ? `setting ${JSON.stringify(op.audit.key)}`
    : op.op === "skill.put" ? `skill ${JSON.stringify(op.record.name)} of agent ${JSON.stringify(op.record.agentId)}`
    : undefined;
  return target === undefined ? op.op : `${op.op} of ${target}`;
}

/**
 * Write a snapshot file (see SNAPSHOT_FORMAT) row by row, in pieces of about SNAPSHOT_CHUNK_BYTES,
 * so a large state never stops the process for the whole serialization; returns the bytes written.
 */
async function writeSnapshotFile(handle: FileHandle, generation: number, tables: TablesCut): Promise<number> {
  const { snapshotRowChars, snapshotLineBytes } = lineLimits;
  let lines: Buffer[] = [];
  let pending = 0;
  let bytes = 0;
  const flush = async () => {
    const buffer = Buffer.concat(lines);
    lines = [];
    pending = 0;
    let written = 0;
    while (written < buffer.length) written += (await handle.write(buffer, written, buffer.length - written)).bytesWritten;
    bytes += buffer.length;
  };
  const push = (json: string) => {
    const line = encodeLine(json);
    lines.push(line);
    pending += line.length;
    return line.length;
  };
  push(`{"format":${SNAPSHOT_FORMAT},"generation":${generation}}`);
  let count = 0;
  for (const name of StateTables.snapshotTables) {
    const rows: unknown[] = tables[name] ?? [];
    for (let index = 0; index < rows.length; index += 1) {
      try {
        for (const json of snapshotLines(name, rows[index], snapshotRowChars)) {
          // Checked before the snapshot replaces anything: a line that cannot be read back would lose the folder.
          const lineBytes = push(json) - LINE_FRAME_BYTES;
          if (lineBytes > snapshotLineBytes) throw new Error(`${describeRow(name, rows[index])} makes a snapshot line of ${lineBytes} bytes, over the ${snapshotLineBytes} that read back as one string`);
          count += 1;
          if (pending >= SNAPSHOT_CHUNK_BYTES) await flush();
        }
      } catch (error) {
        if (error instanceof RangeError && /string length/i.test(error.message)) {
          throw new Error(`${describeRow(name, rows[index])} makes a snapshot line longer than the longest string Node.js makes (${constants.MAX_STRING_LENGTH} characters)`, { cause: error });
        }
        throw error;
      }
    }
  }
  push(`["end",${count}]`);
  await flush();
  return bytes;
}

/** Tables only their own ops write, whose reads wait for their own last write alone. */
type SeparateTable = "memory" | "file";

interface ReadOptions {
  /** The table the query reads, if it is one of the separate ones. */
  onlyFrom?: SeparateTable;
  /** The query builds its answer afresh (events parsed from their texts): it is not copied again. */
  fresh?: boolean;
}

function separateTableOf(op: StateOp): SeparateTable | undefined {
  return op.op === "memory.put" || op.op === "memory.delete" ? "memory" : op.op === "file.put" || op.op === "file.delete" ? "file" : undefined;
}
