import type {
  CheckpointRecord,
  ConversationMessage,
  DeliveryRecord,
  FileRecord,
  JsonValue,
  MemoryRecord,
  RunEvent,
  RunRecord,
  SandboxSessionRecord,
  ScheduleRecord,
  SettingAuditEvent,
  SkillRecord,
  StepRecord,
  ToolCallRecord,
  UsageRecord,
} from "@assemblyline-agents/core";

/**
 * One primitive write. A committed log record is a list of these; replaying the
 * records of a generation on top of its snapshot rebuilds the state exactly.
 * Every op carries final values (ids, times, leases), never a decision to redo.
 */
export type StateOp =
  | { op: "run.create"; run: RunRecord; ordinal: number; idempotencyKey: string | null; event: RunEvent }
  | { op: "run.put"; run: RunRecord }
  | { op: "events.append"; runId: string; events: RunEvent[] }
  | { op: "toolCall.put"; call: ToolCallRecord }
  | { op: "step.put"; step: StepRecord }
  | { op: "checkpoint.put"; runId: string; checkpoint: CheckpointRecord | null }
  | { op: "delivery.put"; delivery: DeliveryRecord }
  | { op: "conversation.append"; conversationId: string; messages: ConversationMessage[] }
  | { op: "schedule.put"; schedule: ScheduleRecord }
  | { op: "schedule.delete"; id: string }
  | { op: "file.put"; record: FileRecord }
  | { op: "file.delete"; path: string }
  | { op: "usage.put"; record: UsageRecord }
  | { op: "sandboxSession.put"; record: SandboxSessionRecord }
  | { op: "sandboxSession.delete"; key: string }
  | { op: "memory.put"; record: MemoryRecord }
  | { op: "memory.delete"; path: string }
  | { op: "setting.put"; audit: SettingAuditEvent }
  | { op: "skill.put"; record: SkillRecord }
  | { op: "skill.delete"; agentId: string; name: string };

export interface RunEntry {
  record: RunRecord;
  /** Creation order: listRuns pages by it, so equal timestamps still order stably. */
  ordinal: number;
  events: RunEvent[];
  toolCalls: Map<string, ToolCallRecord>;
  steps: Map<string, StepRecord>;
  checkpoint: CheckpointRecord | undefined;
  deliveryIds: string[];
  /** The highest fencing token the run's lease ever had; kept when the lease is released. */
  fence: number;
}

/** The snapshot file's body: every table as plain arrays, in insertion order. */
export interface TablesSnapshot {
  runs: Array<{
    record: RunRecord;
    ordinal: number;
    events: RunEvent[];
    toolCalls: ToolCallRecord[];
    steps: StepRecord[];
    checkpoint: CheckpointRecord | null;
    deliveryIds: string[];
    /** Absent in snapshots written before fencing tokens: the lease's token, else 0. */
    fence?: number;
  }>;
  idempotency: Array<[string, string]>;
  deliveries: DeliveryRecord[];
  conversations: Array<[string, ConversationMessage[]]>;
  schedules: ScheduleRecord[];
  files: FileRecord[];
  usage: UsageRecord[];
  sandboxSessions: SandboxSessionRecord[];
  memory: MemoryRecord[];
  settings: Array<[string, JsonValue]>;
  settingAudit: SettingAuditEvent[];
  /** Absent in snapshots written before the skills facet existed. */
  skills?: SkillRecord[];
}

/** The whole state in memory; changed only through `apply`. */
export class StateTables {
  readonly runs = new Map<string, RunEntry>();
  readonly idempotency = new Map<string, string>();
  readonly deliveries = new Map<string, DeliveryRecord>();
  /** The pending deliveries, in creation order: a claim looks at these, not at every delivery ever made. */
  readonly pendingDeliveries = new Map<string, DeliveryRecord>();
  readonly conversations = new Map<string, ConversationMessage[]>();
  readonly schedules = new Map<string, ScheduleRecord>();
  readonly files = new Map<string, FileRecord>();
  readonly usage = new Map<string, UsageRecord>();
  readonly sandboxSessions = new Map<string, SandboxSessionRecord>();
  readonly memory = new Map<string, MemoryRecord>();
  readonly settings = new Map<string, JsonValue>();
  readonly settingAudit: SettingAuditEvent[] = [];
  /** Skills by JSON [agentId, name]. */
  readonly skills = new Map<string, SkillRecord>();
  nextOrdinal = 1;

  apply(op: StateOp): void {
    switch (op.op) {
      case "run.create":
        this.runs.set(op.run.id, {
          record: op.run,
          ordinal: op.ordinal,
          events: [op.event],
          toolCalls: new Map(),
          steps: new Map(),
          checkpoint: undefined,
          deliveryIds: [],
          fence: op.run.lease?.token ?? 0,
        });
        if (op.idempotencyKey !== null) this.idempotency.set(op.idempotencyKey, op.run.id);
        this.nextOrdinal = Math.max(this.nextOrdinal, op.ordinal + 1);
        return;
      case "run.put": {
        const entry = this.run(op.run.id);
        entry.record = op.run;
        // Tokens only grow: the counter follows every lease a put records, and survives releases.
        entry.fence = Math.max(entry.fence, op.run.lease?.token ?? 0);
        return;
      }
      case "events.append":
        this.run(op.runId).events.push(...op.events);
        return;
      case "toolCall.put":
        this.run(op.call.runId).toolCalls.set(op.call.callId, op.call);
        return;
      case "step.put":
        this.run(op.step.runId).steps.set(op.step.key, op.step);
        return;
      case "checkpoint.put":
        this.run(op.runId).checkpoint = op.checkpoint ?? undefined;
        return;
      case "delivery.put": {
        const entry = this.run(op.delivery.runId);
        if (!this.deliveries.has(op.delivery.id)) entry.deliveryIds.push(op.delivery.id);
        this.putDelivery(op.delivery);
        return;
      }
      case "conversation.append": {
        const list = this.conversations.get(op.conversationId) ?? [];
        list.push(...op.messages);
        this.conversations.set(op.conversationId, list);
        return;
      }
      case "schedule.put":
        this.schedules.set(op.schedule.id, op.schedule);
        return;
      case "schedule.delete":
        this.schedules.delete(op.id);
        return;
      case "file.put":
        this.files.set(op.record.path, op.record);
        return;
      case "file.delete":
        this.files.delete(op.path);
        return;
      case "usage.put":
        this.usage.set(op.record.id, op.record);
        return;
      case "sandboxSession.put":
        this.sandboxSessions.set(op.record.key, op.record);
        return;
      case "sandboxSession.delete":
        this.sandboxSessions.delete(op.key);
        return;
      case "memory.put":
        this.memory.set(op.record.path, op.record);
        return;
      case "memory.delete":
        this.memory.delete(op.path);
        return;
      case "setting.put":
        this.settings.set(op.audit.key, op.audit.value);
        this.settingAudit.push(op.audit);
        return;
      case "skill.put":
        this.skills.set(skillKey(op.record.agentId, op.record.name), op.record);
        return;
      case "skill.delete":
        this.skills.delete(skillKey(op.agentId, op.name));
        return;
      default:
        throw new TypeError(`unknown state op ${JSON.stringify((op as { op?: unknown }).op)}`);
    }
  }

  /**
   * Every table as it is now, unaffected by later ops: records are never changed in
   * place (an op replaces them), so copying the lists ops append to is enough.
   */
  toSnapshot(): TablesSnapshot {
    return {
      runs: [...this.runs.values()].map((entry) => ({
        record: entry.record,
        ordinal: entry.ordinal,
        events: entry.events.slice(),
        toolCalls: [...entry.toolCalls.values()],
        steps: [...entry.steps.values()],
        checkpoint: entry.checkpoint ?? null,
        deliveryIds: entry.deliveryIds.slice(),
        fence: entry.fence,
      })),
      idempotency: [...this.idempotency],
      deliveries: [...this.deliveries.values()],
      conversations: [...this.conversations].map(([id, messages]) => [id, messages.slice()]),
      schedules: [...this.schedules.values()],
      files: [...this.files.values()],
      usage: [...this.usage.values()],
      sandboxSessions: [...this.sandboxSessions.values()],
      memory: [...this.memory.values()],
      settings: [...this.settings],
      settingAudit: this.settingAudit.slice(),
      skills: [...this.skills.values()],
    };
  }

  static fromSnapshot(snapshot: TablesSnapshot): StateTables {
    const tables = new StateTables();
    for (const run of snapshot.runs) {
      tables.runs.set(run.record.id, {
        record: run.record,
        ordinal: run.ordinal,
        events: run.events,
        toolCalls: new Map(run.toolCalls.map((call) => [call.callId, call])),
        steps: new Map(run.steps.map((step) => [step.key, step])),
        checkpoint: run.checkpoint ?? undefined,
        deliveryIds: run.deliveryIds,
        fence: run.fence ?? run.record.lease?.token ?? 0,
      });
      tables.nextOrdinal = Math.max(tables.nextOrdinal, run.ordinal + 1);
    }
    for (const [key, runId] of snapshot.idempotency) tables.idempotency.set(key, runId);
    for (const delivery of snapshot.deliveries) tables.putDelivery(delivery);
    for (const [id, messages] of snapshot.conversations) tables.conversations.set(id, messages);
    for (const schedule of snapshot.schedules) tables.schedules.set(schedule.id, schedule);
    for (const record of snapshot.files) tables.files.set(record.path, record);
    for (const record of snapshot.usage) tables.usage.set(record.id, record);
    for (const record of snapshot.sandboxSessions) tables.sandboxSessions.set(record.key, record);
    for (const record of snapshot.memory) tables.memory.set(record.path, record);
    for (const [key, value] of snapshot.settings) tables.settings.set(key, value);
    tables.settingAudit.push(...snapshot.settingAudit);
    for (const record of snapshot.skills ?? []) tables.skills.set(skillKey(record.agentId, record.name), record);
    return tables;
  }

  private putDelivery(delivery: DeliveryRecord): void {
    this.deliveries.set(delivery.id, delivery);
    // A delivery leaves pending only for good (delivered, or failed after its last attempt).
    if (delivery.status === "pending") this.pendingDeliveries.set(delivery.id, delivery);
    else this.pendingDeliveries.delete(delivery.id);
  }

  private run(runId: string): RunEntry {
    const entry = this.runs.get(runId);
    if (!entry) throw new TypeError(`state op names run ${runId}, which the log never created`);
    return entry;
  }
}

export function skillKey(agentId: string, name: string): string {
  return JSON.stringify([agentId, name]);
}
