import {
  AssemblyLineError,
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
  type CreatedRun,
  type CreateRunOptions,
  type ReleaseOptions,
  type NewRun,
  type NewRunEvent,
  type AppendOptions,
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
} from "@assemblyline-agents/core";
import pg from "pg";
import { StateDatabase } from "./database.js";
import { LivenessSession } from "./liveness.js";
import * as conversations from "./facets/conversations.js";
import * as deliveries from "./facets/deliveries.js";
import * as files from "./facets/files.js";
import * as journal from "./facets/journal.js";
import * as memory from "./facets/memory.js";
import * as runs from "./facets/runs.js";
import * as sandboxSessions from "./facets/sandbox-sessions.js";
import * as schedules from "./facets/schedules.js";
import * as settings from "./facets/settings.js";
import * as skills from "./facets/skills.js";
import * as usage from "./facets/usage.js";
import { checkOptions, checkPoolSize, resolveConnectionString, resolveSchema, type PostgresStateRuntimeOptions } from "./options.js";
import { migrateSchema, type MigrationResult } from "./schema/migrate.js";

/**
 * Every state facet on PostgreSQL.
 *
 * Migrations: `migrate()` brings the schema to this release's version under an
 * advisory lock (replicas booting together migrate once) and refuses a schema a
 * newer release migrated (AL_ERR_STATE_SCHEMA_NEWER). Hosts should await it at
 * boot (`createPostgresState` does); otherwise the first call runs it.
 *
 * Round trips: every method is one statement, and so its own transaction.
 * appendEvents and createRun included: the events, the state change and the
 * run's `last_seq` commit together, or not at all.
 *
 * Clocks: leases, due times and delivery availability compare against the
 * database clock, so replicas agree; a `now` passed to a lease or claim method
 * replaces it for that call (tests).
 */
export class PostgresStateAdapter implements StateAdapter {
  readonly schema: string;
  readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private readonly db: StateDatabase;
  private migration: Promise<MigrationResult> | undefined;
  private closed = false;
  /** Undefined with `livenessSession: false`: leases only expire. */
  private readonly liveness: LivenessSession | undefined;

  constructor(options: PostgresStateRuntimeOptions = {}) {
    checkOptions(options);
    this.schema = resolveSchema(options.schema);
    const withLiveness = options.livenessSession ?? true;
    if (withLiveness) checkPoolSize(options.pool ? (options.pool as { options?: { max?: number } }).options?.max : options.maxConnections, options.pool ? "pool" : "maxConnections");
    if (options.pool) {
      this.pool = options.pool;
      this.ownsPool = false;
    } else {
      this.pool = new pg.Pool({
        connectionString: resolveConnectionString(options),
        ...(options.maxConnections === undefined ? {} : { max: options.maxConnections }),
      });
      this.ownsPool = true;
      // An idle connection that drops (server restart, failover) is removed by the
      // pool and reopened on demand; without a listener it would crash the process.
      this.pool.on("error", (error) => {
        options.logger?.warn({ err: error, schema: this.schema }, "postgres state: idle connection failed; it will be replaced");
      });
    }
    this.db = new StateDatabase(this.pool, this.schema, () => this.ready(), options.preparedStatements ?? true);
    this.liveness = withLiveness ? new LivenessSession(this.pool, (message, error) => options.logger?.warn({ err: error, schema: this.schema }, message)) : undefined;
  }

  /**
   * Bring the schema to this release's version. Safe to call from every replica at
   * once and on every boot; concurrent calls on one adapter share one attempt, and
   * a failed attempt is retried by the next call.
   */
  migrate(): Promise<MigrationResult> {
    if (this.closed) return Promise.reject(this.closedError());
    if (!this.migration) {
      this.migration = migrateSchema(this.pool, this.schema).catch((error: unknown) => {
        this.migration = undefined;
        throw error;
      });
    }
    return this.migration;
  }

  /** Ends the pool the adapter opened; a pool passed in is left to its owner. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.liveness?.close();
    if (this.ownsPool) await this.pool.end();
  }

  /** The liveness key leases record, after the schema is ready (null: leases only expire). */
  private async livenessKey(): Promise<string | null> {
    await this.ready();
    return this.liveness ? this.liveness.key() : null;
  }

  private ready(): Promise<unknown> {
    if (this.closed) return Promise.reject(this.closedError());
    return this.migration ?? this.migrate();
  }

  private closedError(): AssemblyLineError {
    return new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", `the PostgreSQL state adapter for schema "${this.schema}" was closed`, {
      fix: "Do not use a state adapter after close(); create a new one.",
      details: { schema: this.schema },
    });
  }

  // ---- runs ------------------------------------------------------------------

  async createRun(run: NewRun, options: CreateRunOptions = {}): Promise<CreatedRun> {
    return runs.createRun(this.db, run, options, options.lease ? await this.livenessKey() : null);
  }
  getRun(runId: string): Promise<RunRecord | undefined> {
    return runs.getRun(this.db, runId);
  }
  listRuns(filter?: RunListFilter): Promise<RunPage> {
    return runs.listRuns(this.db, filter);
  }
  appendEvents(runId: string, events: NewRunEvent[], change?: RunStateChange, options?: AppendOptions): Promise<RunEvent[]> {
    return journal.appendEvents(this.db, runId, events, change, options);
  }
  listEvents(runId: string, options?: { afterSeq?: number; limit?: number }): Promise<RunEvent[]> {
    return journal.listEvents(this.db, runId, options);
  }
  markObserved(runId: string, seq: number): Promise<void> {
    return journal.markObserved(this.db, runId, seq);
  }
  getToolCall(runId: string, callId: string): Promise<ToolCallRecord | undefined> {
    return journal.getToolCall(this.db, runId, callId);
  }
  listToolCalls(runId: string): Promise<ToolCallRecord[]> {
    return journal.listToolCalls(this.db, runId);
  }
  getStep(runId: string, key: string): Promise<StepRecord | undefined> {
    return journal.getStep(this.db, runId, key);
  }
  getCheckpoint(runId: string): Promise<CheckpointRecord | undefined> {
    return journal.getCheckpoint(this.db, runId);
  }
  async acquireRunLease(runId: string, owner: string, ttlMs: number, now?: Date): Promise<TakenRunLease | null> {
    return runs.acquireRunLease(this.db, runId, owner, ttlMs, now, await this.livenessKey(), this.liveness !== undefined);
  }
  renewRunLease(runId: string, fence: RunFence, ttlMs: number, now?: Date): Promise<RunLease | null> {
    return runs.renewRunLease(this.db, runId, fence, ttlMs, now, this.liveness?.currentKey() ?? null);
  }
  releaseRunLease(runId: string, owner: string, token?: number, options: ReleaseOptions = {}): Promise<void> {
    return runs.releaseRunLease(this.db, runId, owner, token, options);
  }
  async claimRecoverableRuns(options: ClaimOptions): Promise<ClaimedRunRecord[]> {
    return runs.claimRecoverableRuns(this.db, options, await this.livenessKey(), this.liveness !== undefined);
  }
  listDeliveries(runId: string): Promise<DeliveryRecord[]> {
    return deliveries.listDeliveries(this.db, runId);
  }
  claimDeliveries(options: ClaimOptions): Promise<DeliveryRecord[]> {
    return deliveries.claimDeliveries(this.db, options);
  }
  completeDelivery(deliveryId: string, owner: string): Promise<void> {
    return deliveries.completeDelivery(this.db, deliveryId, owner);
  }
  failDelivery(deliveryId: string, owner: string, error: string, retryAt?: Date, options?: FailDeliveryOptions): Promise<void> {
    return deliveries.failDelivery(this.db, deliveryId, owner, error, retryAt, options);
  }

  // ---- conversations -----------------------------------------------------------

  appendConversationMessages(conversationId: string, messages: ConversationMessage[], options?: ConversationScope): Promise<void> {
    return conversations.appendConversationMessages(this.db, conversationId, messages, options);
  }
  listConversationMessages(conversationId: string, options?: { limit?: number } & ConversationScope): Promise<ConversationMessage[]> {
    return conversations.listConversationMessages(this.db, conversationId, options);
  }

  // ---- schedules ---------------------------------------------------------------

  upsertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<void> {
    return schedules.upsertSchedule(this.db, schedule);
  }
  insertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    return schedules.insertSchedule(this.db, schedule);
  }
  replaceSchedule(expected: Omit<ScheduleRecord, "lease">, next: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    return schedules.replaceSchedule(this.db, expected, next);
  }
  deleteScheduleIf(expected: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    return schedules.deleteScheduleIf(this.db, expected);
  }
  getSchedule(id: string): Promise<ScheduleRecord | undefined> {
    return schedules.getSchedule(this.db, id);
  }
  listSchedules(): Promise<ScheduleRecord[]> {
    return schedules.listSchedules(this.db);
  }
  claimDueSchedules(options: ScheduleClaimOptions): Promise<ScheduleRecord[]> {
    return schedules.claimDueSchedules(this.db, options);
  }
  completeScheduleRun(id: string, owner: string, nextRunAt: Date, claimedNextRunAt?: string, claimed?: Omit<ScheduleRecord, "lease">): Promise<void> {
    return schedules.completeScheduleRun(this.db, id, owner, nextRunAt, claimedNextRunAt, claimed);
  }
  deleteSchedule(id: string): Promise<void> {
    return schedules.deleteSchedule(this.db, id);
  }

  // ---- files -------------------------------------------------------------------

  putFileRecord(record: FileRecord): Promise<void> {
    return files.putFileRecord(this.db, record);
  }
  getFileRecord(path: string): Promise<FileRecord | undefined> {
    return files.getFileRecord(this.db, path);
  }
  listFileRecords(options?: FileListOptions): Promise<FileRecord[]> {
    return files.listFileRecords(this.db, options);
  }
  firstFileRecords(options: FileListOptions, limit: number): Promise<FileRecordPage> {
    return files.firstFileRecords(this.db, options, limit);
  }
  deleteFileRecord(path: string): Promise<void> {
    return files.deleteFileRecord(this.db, path);
  }

  // ---- usage -------------------------------------------------------------------

  recordUsage(record: UsageRecord): Promise<void> {
    return usage.recordUsage(this.db, record);
  }
  listUsage(filter: UsageFilter): Promise<UsageRecord[]> {
    return usage.listUsage(this.db, filter);
  }

  // ---- sandbox sessions --------------------------------------------------------

  getSandboxSession(key: string): Promise<SandboxSessionRecord | undefined> {
    return sandboxSessions.getSandboxSession(this.db, key);
  }
  putSandboxSession(record: SandboxSessionRecord): Promise<void> {
    return sandboxSessions.putSandboxSession(this.db, record);
  }
  deleteSandboxSession(key: string): Promise<void> {
    return sandboxSessions.deleteSandboxSession(this.db, key);
  }
  listSandboxSessions(): Promise<SandboxSessionRecord[]> {
    return sandboxSessions.listSandboxSessions(this.db);
  }

  // ---- memory ------------------------------------------------------------------

  readMemory(path: string): Promise<MemoryRecord | undefined> {
    return memory.readMemory(this.db, path);
  }
  writeMemory(path: string, content: string): Promise<void> {
    return memory.writeMemory(this.db, path, content);
  }
  listMemory(prefix?: string): Promise<string[]> {
    return memory.listMemory(this.db, prefix);
  }

  listMemoryEntries(prefix?: string): Promise<MemoryEntry[]> {
    return memory.listMemoryEntries(this.db, prefix);
  }

  firstMemoryEntries(prefix: string | undefined, limit: number): Promise<MemoryPage> {
    return memory.firstMemoryEntries(this.db, prefix, limit);
  }
  deleteMemory(path: string): Promise<void> {
    return memory.deleteMemory(this.db, path);
  }

  // ---- skills ------------------------------------------------------------------

  getSkill(agentId: string, name: string): Promise<SkillRecord | undefined> {
    return skills.getSkill(this.db, agentId, name);
  }
  listSkills(agentId: string): Promise<SkillRecord[]> {
    return skills.listSkills(this.db, agentId);
  }
  putSkill(record: SkillRecord, options: { expectedDigest: string | null }): Promise<boolean> {
    return skills.putSkill(this.db, record, options);
  }
  deleteSkill(agentId: string, name: string, options: { expectedDigest: string }): Promise<boolean> {
    return skills.deleteSkill(this.db, agentId, name, options);
  }

  // ---- settings ----------------------------------------------------------------

  getSetting(key: string): Promise<JsonValue | undefined> {
    return settings.getSetting(this.db, key);
  }
  putSetting(key: string, value: JsonValue, audit: { actor: string; reason?: string }): Promise<SettingAuditEvent> {
    return settings.putSetting(this.db, key, value, audit);
  }
  listSettingAudit(options?: { key?: string; limit?: number }): Promise<SettingAuditEvent[]> {
    return settings.listSettingAudit(this.db, options);
  }
}
