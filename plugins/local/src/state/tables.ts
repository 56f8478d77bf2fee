import {
  RunsInCreationOrder,
  PendingDeliveries,
  UsageRecords,
  RecordsByPath,
  MemoryRecordsByPath,
  type CheckpointRecord,
  type ConversationMessage,
  type DeliveryRecord,
  type FileRecord,
  type JsonValue,
  type MemoryRecord,
  type RunEvent,
  type RunRecord,
  type SandboxSessionRecord,
  type ScheduleRecord,
  type SettingAuditEvent,
  type SkillRecord,
  type StepRecord,
  type ToolCallRecord,
  type UsageRecord,
} from "@assemblyline-agents/core";

/**
 * One primitive write. A committed log record is a list of these; replaying the
 * records of a generation on top of its snapshot rebuilds the state exactly.
 * Every op carries final values (ids, times, leases), never a decision to redo.
 */
export type StateOp =
  /** `event` (run.created) follows from the record and is left out since; logs written before carry it. */
  | { op: "run.create"; run: RunRecord; ordinal: number; idempotencyKey: string | null; event?: RunEvent }
  | { op: "run.put"; run: RunRecord }
  /** The fields of the run's record that changed: most writes move a few small ones (lastSeq, a lease). */
  | { op: "run.patch"; runId: string; set: Partial<RunRecord> }
  /** `createdAt`: the time of every event that has none of its own (one append's events share it). */
  | { op: "events.append"; runId: string; createdAt?: string; events: LoggedEvent[] }
  | { op: "toolCall.put"; call: ToolCallRecord }
  /** The fields of a stored tool call that changed (its status, output, times), as run.patch does for runs. */
  | { op: "toolCall.patch"; runId: string; callId: string; set: Partial<ToolCallRecord> }
  | { op: "step.put"; step: StepRecord }
  | { op: "checkpoint.put"; runId: string; checkpoint: CheckpointRecord | null }
  | { op: "delivery.put"; delivery: DeliveryRecord }
  /** `agentId`: whose history the messages are; logs written before it have none (messages every agent lists). */
  | { op: "conversation.append"; conversationId: string; messages: ConversationMessage[]; agentId?: string }
  | { op: "schedule.put"; schedule: ScheduleRecord }
  | { op: "schedule.delete"; id: string }
  | { op: "file.put"; record: FileRecord }
  | { op: "file.delete"; path: string }
  /** `record.agentId`: the agent of the run that made the call; records of logs written before it have none (counted by every agent). */
  | { op: "usage.put"; record: UsageRecord }
  | { op: "sandboxSession.put"; record: SandboxSessionRecord }
  | { op: "sandboxSession.delete"; key: string }
  | { op: "memory.put"; record: MemoryRecord }
  | { op: "memory.delete"; path: string }
  | { op: "setting.put"; audit: SettingAuditEvent }
  | { op: "skill.put"; record: SkillRecord }
  | { op: "skill.delete"; agentId: string; name: string };

/**
 * An event as the log holds it: its id and runId follow from the op's runId and its
 * seq, and its time from the op's, so they are not written again for every event
 * (logs written before carry them).
 */
export type LoggedEvent = Omit<RunEvent, "id" | "runId" | "createdAt"> & Partial<Pick<RunEvent, "id" | "runId" | "createdAt">>;

/**
 * The form of `events.append` a live write applies: each event as the JSON text of
 * its LoggedEvent (seq, type, data) that the log record holds. Never logged itself.
 */
export interface EventTextsOp {
  op: "events.appendTexts";
  runId: string;
  createdAt: string;
  texts: string[];
}

/** The form of `toolCall.put` a live write applies: the call as the JSON text the log record holds. Never logged itself. */
export interface ToolCallTextOp {
  op: "toolCall.putText";
  runId: string;
  callId: string;
  text: string;
}

/** The form of `step.put` a live write applies: the step as the JSON text the log record holds. Never logged itself. */
export interface StepTextOp {
  op: "step.putText";
  runId: string;
  key: string;
  text: string;
}

/** What a live write applies: the ops of its log record, those with texts as the texts the record is made of. */
export type AppliedOp = StateOp | EventTextsOp | ToolCallTextOp | StepTextOp;

export interface RunEntry {
  record: RunRecord;
  /** Creation order: listRuns pages by it, so equal timestamps still order stably. */
  ordinal: number;
  /**
   * Each event as the JSON text of its LoggedEvent, `{"seq":…,"type":…,"data":…}`, and
   * its time: a string per event, not a tree of objects for the collector to scan while
   * the tables grow, and on a live write the very text the log holds, so nothing is
   * copied to keep it. Seqs are contiguous from 1: seq n sits at index n - 1.
   */
  eventTexts: string[];
  eventTimes: string[];
  /**
   * Tool calls by call id and steps by key, each as the JSON text of its record (run id
   * included), for the same reasons as the events: nothing for the collector to scan, and
   * on a live write the very text the log holds. Parsed afresh for each read.
   */
  toolCalls: Map<string, string>;
  steps: Map<string, string>;
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

/** The tables of a snapshot. */
export type SnapshotTable = keyof TablesSnapshot;
/** A row of a snapshot's `table`. */
export type SnapshotRow<T extends SnapshotTable> = NonNullable<TablesSnapshot[T]>[number];
/** A run's row as the tables hand it to the snapshot writer: its events, tool calls and steps still as their texts (see snapshotLines). */
export type SnapshotRunRow = Omit<TablesSnapshot["runs"][number], "events" | "toolCalls" | "steps"> & {
  eventTexts: string[];
  eventTimes: string[];
  toolCalls: string[];
  steps: string[];
};

/** The tables at a cut, for the snapshot writer: a TablesSnapshot once written. */
export type TablesCut = Omit<TablesSnapshot, "runs"> & { runs: SnapshotRunRow[] };

/**
 * Rows that go on where the row before them left off, so that no row is too long to read back (see
 * snapshotLines): the events, tool calls and steps of the `runs` row of `runId`, its checkpoint, and the
 * messages of a `conversations` row. Snapshots written before them hold each run and conversation whole
 * in one row; versions before them refuse a snapshot that has them ("names no table").
 */
export interface SnapshotParts {
  runEvents: { runId: string; events: RunEvent[] };
  runToolCalls: { runId: string; toolCalls: ToolCallRecord[] };
  runSteps: { runId: string; steps: StepRecord[] };
  runCheckpoint: { runId: string; checkpoint: CheckpointRecord };
  conversationMessages: [string, ConversationMessage[]];
}

/** The kinds of rows that go on where a row before them left off. */
export type SnapshotPart = keyof SnapshotParts;

/** The whole state in memory; changed only through `apply`. */
export class StateTables {
  readonly runs = new Map<string, RunEntry>();
  /** The same runs in creation order, which listRuns pages through from the newest. */
  readonly runOrder = new RunsInCreationOrder<RunEntry>();
  readonly idempotency = new Map<string, string>();
  readonly deliveries = new Map<string, DeliveryRecord>();
  /** The pending deliveries, by when they are due: a claim looks at the due ones, not at every delivery ever made. */
  readonly pendingDeliveries = new PendingDeliveries();
  readonly conversations = new Map<string, ConversationMessage[]>();
  readonly schedules = new Map<string, ScheduleRecord>();
  readonly files = new RecordsByPath<FileRecord>();
  readonly usage = new UsageRecords();
  readonly sandboxSessions = new Map<string, SandboxSessionRecord>();
  readonly memory = new MemoryRecordsByPath();
  readonly settings = new Map<string, JsonValue>();
  readonly settingAudit: SettingAuditEvent[] = [];
  /** Skills by JSON [agentId, name]. */
  readonly skills = new Map<string, SkillRecord>();
  nextOrdinal = 1;

  /** Hold a run, in both its tables; one the log creates again replaces the one held. */
  private addRun(entry: RunEntry): void {
    const held = this.runs.get(entry.record.id);
    if (held) this.runOrder.remove(held);
    this.runs.set(entry.record.id, entry);
    this.runOrder.add(entry);
  }

  /**
   * Apply one op; returns about how many bytes of earlier records it superseded
   * (replaced or deleted), for the compaction policy. A record an op replaces is
   * counted at `opBytes`, the size of the op that replaces it, as records of one kind
   * are alike; one it deletes is counted at its own size, as deletes are rare and
   * their records may be large.
   */
  apply(op: AppliedOp, opBytes = 0): number {
    switch (op.op) {
      case "run.create": {
        const created = op.event ?? createdEventOf(op.run);
        this.addRun({
          record: op.run,
          ordinal: op.ordinal,
          eventTexts: [loggedEventText(created)],
          eventTimes: [created.createdAt],
          toolCalls: new Map(),
          steps: new Map(),
          checkpoint: undefined,
          deliveryIds: [],
          fence: op.run.lease?.token ?? 0,
        });
        if (op.idempotencyKey !== null) this.idempotency.set(op.idempotencyKey, op.run.id);
        this.nextOrdinal = Math.max(this.nextOrdinal, op.ordinal + 1);
        return 0;
      }
      case "run.put": {
        const entry = this.run(op.run.id);
        const before = entry.record.status;
        entry.record = op.run;
        if (op.run.status !== before) this.runOrder.statusChanged(entry);
        // Tokens only grow: the counter follows every lease a put records, and survives releases.
        entry.fence = Math.max(entry.fence, op.run.lease?.token ?? 0);
        return opBytes;
      }
      case "run.patch": {
        const entry = this.run(op.runId);
        // A new record, never a change in place: a snapshot in progress holds the old one.
        const before = entry.record.status;
        entry.record = { ...entry.record, ...op.set };
        if (entry.record.status !== before) this.runOrder.statusChanged(entry);
        entry.fence = Math.max(entry.fence, entry.record.lease?.token ?? 0);
        return opBytes;
      }
      case "events.append": {
        // Replayed from the log (or written before it held texts): ids and run ids follow from seq and the op.
        const { eventTexts, eventTimes } = this.run(op.runId);
        for (const event of op.events) {
          eventTexts.push(loggedEventText(event));
          eventTimes.push((event.createdAt ?? op.createdAt)!);
        }
        return 0;
      }
      case "events.appendTexts": {
        const { eventTexts, eventTimes } = this.run(op.runId);
        for (const text of op.texts) {
          eventTexts.push(text);
          eventTimes.push(op.createdAt);
        }
        return 0;
      }
      case "toolCall.put":
        return replaced(this.run(op.call.runId).toolCalls, op.call.callId, flatJson(op.call), opBytes);
      case "toolCall.putText":
        return replaced(this.run(op.runId).toolCalls, op.callId, op.text, opBytes);
      case "toolCall.patch": {
        // Written by earlier versions: a live write now logs the whole call.
        const { toolCalls } = this.run(op.runId);
        const stored = toolCalls.get(op.callId);
        if (stored === undefined) throw new TypeError(`state op patches tool call ${op.callId} of run ${op.runId}, which the log never stored`);
        toolCalls.set(op.callId, flatJson({ ...(JSON.parse(stored) as ToolCallRecord), ...op.set }));
        return opBytes;
      }
      case "step.put":
        return replaced(this.run(op.step.runId).steps, op.step.key, flatJson(op.step), opBytes);
      case "step.putText":
        return replaced(this.run(op.runId).steps, op.key, op.text, opBytes);
      case "checkpoint.put": {
        const entry = this.run(op.runId);
        // Cleared, a continuation (which can be large) counts at its own size, as a delete does.
        const superseded = entry.checkpoint === undefined ? 0 : op.checkpoint ? opBytes : JSON.stringify(entry.checkpoint).length + opBytes;
        entry.checkpoint = op.checkpoint ?? undefined;
        return superseded;
      }
      case "delivery.put": {
        const entry = this.run(op.delivery.runId);
        const known = this.deliveries.has(op.delivery.id);
        if (!known) entry.deliveryIds.push(op.delivery.id);
        this.putDelivery(op.delivery);
        return known ? opBytes : 0;
      }
      case "conversation.append": {
        const list = this.conversations.get(op.conversationId) ?? [];
        const agentId = op.agentId ?? null;
        list.push(...op.messages.map((message) => ({ ...message, agentId })));
        this.conversations.set(op.conversationId, list);
        return 0;
      }
      case "schedule.put":
        return replaced(this.schedules, op.schedule.id, op.schedule, opBytes);
      case "schedule.delete":
        return deleted(this.schedules, op.id, opBytes);
      case "file.put":
        return replaced(this.files, op.record.path, op.record, opBytes);
      case "file.delete":
        return deleted(this.files, op.path, opBytes);
      case "usage.put":
        return this.usage.put(op.record) ? opBytes : 0;
      case "sandboxSession.put":
        return replaced(this.sandboxSessions, op.record.key, op.record, opBytes);
      case "sandboxSession.delete":
        return deleted(this.sandboxSessions, op.key, opBytes);
      case "memory.put":
        return replaced(this.memory, op.record.path, op.record, opBytes);
      case "memory.delete":
        return deleted(this.memory, op.path, opBytes);
      case "setting.put":
        // The audit trail keeps every value: nothing is superseded.
        this.settings.set(op.audit.key, op.audit.value);
        this.settingAudit.push(op.audit);
        return 0;
      case "skill.put":
        return replaced(this.skills, skillKey(op.record.agentId, op.record.name), op.record, opBytes);
      case "skill.delete":
        return deleted(this.skills, skillKey(op.agentId, op.name), opBytes);
      default:
        throw new TypeError(`unknown state op ${JSON.stringify((op as { op?: unknown }).op)}`);
    }
  }

  /**
   * Every table as it is now, unaffected by later ops: records are never changed in
   * place (an op replaces them), so copying the lists ops append to is enough.
   */
  toSnapshot(): TablesCut {
    return {
      runs: [...this.runs.values()].map((entry) => ({
        record: entry.record,
        ordinal: entry.ordinal,
        eventTexts: entry.eventTexts.slice(),
        eventTimes: entry.eventTimes.slice(),
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

  /**
   * How a row of each snapshot table is held: a holder for every table a snapshot has (a mapped type,
   * so none is left out), in the order the snapshot writer writes them.
   */
  private static readonly snapshotRowHolders: { [T in SnapshotTable]: (tables: StateTables, row: SnapshotRow<T>) => void } = {
    runs: (tables, run) => {
      tables.addRun({
        record: run.record,
        ordinal: run.ordinal,
        eventTexts: run.events.map(loggedEventText),
        eventTimes: run.events.map((event) => event.createdAt),
        toolCalls: new Map(run.toolCalls.map((call) => [call.callId, flatJson(call)])),
        steps: new Map(run.steps.map((step) => [step.key, flatJson(step)])),
        checkpoint: run.checkpoint ?? undefined,
        deliveryIds: run.deliveryIds,
        fence: run.fence ?? run.record.lease?.token ?? 0,
      });
      tables.nextOrdinal = Math.max(tables.nextOrdinal, run.ordinal + 1);
    },
    idempotency: (tables, [key, runId]) => tables.idempotency.set(key, runId),
    deliveries: (tables, delivery) => tables.putDelivery(delivery),
    conversations: (tables, [id, messages]) => tables.conversations.set(id, messages),
    schedules: (tables, schedule) => tables.schedules.set(schedule.id, schedule),
    files: (tables, record) => tables.files.set(record.path, record),
    usage: (tables, record) => tables.usage.put(record),
    sandboxSessions: (tables, record) => tables.sandboxSessions.set(record.key, record),
    memory: (tables, record) => tables.memory.set(record.path, record),
    settings: (tables, [key, value]) => tables.settings.set(key, value),
    settingAudit: (tables, audit) => tables.settingAudit.push(audit),
    skills: (tables, record) => tables.skills.set(skillKey(record.agentId, record.name), record),
  };

  /** How each part row (see SnapshotParts) is added to the row it goes on from, which must be held already. */
  private static readonly snapshotPartHolders: { [P in SnapshotPart]: (tables: StateTables, row: SnapshotParts[P]) => void } = {
    runEvents: (tables, { runId, events }) => {
      const entry = tables.run(runId);
      for (const event of events) {
        // Seqs are contiguous from 1 (seq n at index n - 1): events out of order would be read at the wrong seqs.
        const seq = entry.eventTexts.length + 1;
        if (event.seq !== seq) throw new TypeError(`the snapshot's events of run ${runId} go on at seq ${JSON.stringify(event.seq)}, not at ${seq}`);
        entry.eventTexts.push(loggedEventText(event));
        entry.eventTimes.push(event.createdAt);
      }
    },
    runToolCalls: (tables, { runId, toolCalls }) => {
      const entry = tables.run(runId);
      for (const call of toolCalls) entry.toolCalls.set(call.callId, flatJson(call));
    },
    runSteps: (tables, { runId, steps }) => {
      const entry = tables.run(runId);
      for (const step of steps) entry.steps.set(step.key, flatJson(step));
    },
    runCheckpoint: (tables, { runId, checkpoint }) => {
      tables.run(runId).checkpoint = checkpoint;
    },
    conversationMessages: (tables, [id, messages]) => {
      const list = tables.conversations.get(id);
      if (!list) throw new TypeError(`the snapshot goes on with messages of conversation ${JSON.stringify(id)}, which it never began`);
      // One at a time: spreading a long list into push() would pass each message as an argument.
      for (const message of messages) list.push(message);
    },
  };

  /** Every snapshot table, in the order the snapshot writer writes them. */
  static readonly snapshotTables = Object.keys(StateTables.snapshotRowHolders) as SnapshotTable[];

  /** Whether `name` is a snapshot table. */
  static isSnapshotTable(name: unknown): name is SnapshotTable {
    return typeof name === "string" && Object.hasOwn(StateTables.snapshotRowHolders, name);
  }

  /** Whether `name` is a kind of part row (see SnapshotParts). */
  static isSnapshotPart(name: unknown): name is SnapshotPart {
    return typeof name === "string" && Object.hasOwn(StateTables.snapshotPartHolders, name);
  }

  static fromSnapshot(snapshot: TablesSnapshot): StateTables {
    const tables = new StateTables();
    for (const table of StateTables.snapshotTables) for (const row of snapshot[table] ?? []) tables.addSnapshotRow(table, row);
    return tables;
  }

  /** Hold one row of a snapshot's `table`, as the snapshot writer wrote it (see toSnapshot). */
  addSnapshotRow<T extends SnapshotTable>(table: T, row: SnapshotRow<T>): void {
    // The holder of `table` takes its rows; TypeScript cannot tie the two type parameters together.
    (StateTables.snapshotRowHolders[table] as (tables: StateTables, row: SnapshotRow<T>) => void)(this, row);
  }

  /** Add a part row to the row of a run or conversation it goes on from (see SnapshotParts). */
  addSnapshotPart<P extends SnapshotPart>(part: P, row: SnapshotParts[P]): void {
    (StateTables.snapshotPartHolders[part] as (tables: StateTables, row: SnapshotParts[P]) => void)(this, row);
  }

  /** The events of `entry` from index `start` (seq start + 1) up to `end`, each parsed afresh: the caller's own. */
  eventsOf(entry: RunEntry, start = 0, end = entry.eventTexts.length): RunEvent[] {
    const runId = entry.record.id;
    const events: RunEvent[] = [];
    for (let index = start; index < end; index += 1) {
      const { seq, type, data } = JSON.parse(entry.eventTexts[index]!) as LoggedEvent;
      events.push({ id: `${runId}:${seq}`, runId, seq, type, data, createdAt: entry.eventTimes[index]! });
    }
    return events;
  }

  private putDelivery(delivery: DeliveryRecord): void {
    this.deliveries.set(delivery.id, delivery);
    // A delivery leaves pending only for good (delivered, or failed after its last attempt).
    this.pendingDeliveries.put(delivery);
  }

  private run(runId: string): RunEntry {
    const entry = this.runs.get(runId);
    if (!entry) throw new TypeError(`state op names run ${runId}, which the log never created`);
    return entry;
  }
}

/** The JSON text of an event as the log holds it (seq, type, data), flattened (see flatJson). */
export function loggedEventText(event: Pick<RunEvent, "seq" | "type" | "data">): string {
  return flatJson({ seq: event.seq, type: event.type, data: event.data });
}

/**
 * `value`'s JSON text as one flat string: V8 builds a JSON.stringify result of more than a
 * few dozen characters as a tree of pieces, and converting the text to a number (NaN: it
 * starts with `{`) makes it one string. For records (objects) only.
 */
export function flatJson(value: object): string {
  const text = JSON.stringify(value);
  Number(text);
  return text;
}

/** A stored tool call's record, parsed from its text: the caller's own. */
export function toolCallOf(text: string): ToolCallRecord {
  return JSON.parse(text) as ToolCallRecord;
}

/** A stored step's record, parsed from its text: the caller's own. */
export function stepOf(text: string): StepRecord {
  return JSON.parse(text) as StepRecord;
}

/**
 * The JSON texts of the snapshot lines (`[<table>,<row>]`) that hold `row` of `table`, as TablesCut holds
 * it. One line, unless it is a run or a conversation longer than `rowChars` characters: the run's row then
 * holds its record and checkpoint and what fits of its events, tool calls and steps, and the rest follow in
 * part rows of their own (see SnapshotParts), each no longer than `rowChars` unless one item alone is;
 * a conversation's messages likewise. A run's row grew with every event, and one past the longest string
 * Node.js makes could be written (in pieces) but never read back.
 */
export function* snapshotLines(table: SnapshotTable, row: unknown, rowChars: number): Generator<string> {
  if (table === "runs") yield* snapshotRunLines(row as SnapshotRunRow, rowChars);
  else if (table === "conversations") yield* snapshotConversationLines(row as [string, ConversationMessage[]], rowChars);
  else yield `[${JSON.stringify(table)},${JSON.stringify(row)}]`;
}

/** A list of a run's items (as JSON texts) that its row holds, and the part rows that hold what does not fit there. */
interface RunItems {
  key: "events" | "toolCalls" | "steps";
  part: "runEvents" | "runToolCalls" | "runSteps";
  count: number;
  item: (index: number) => string;
}

/**
 * A run's lines (see snapshotLines), its events in the shape they always had in the snapshot (id, runId,
 * seq, type, data, createdAt), built around their texts without parsing them, and its tool calls and steps
 * as their texts.
 */
function* snapshotRunLines(row: SnapshotRunRow, rowChars: number): Generator<string> {
  const { eventTexts, eventTimes, toolCalls, steps, ...rest } = row;
  const id = rest.record.id;
  const runId = JSON.stringify(id);
  const lists: RunItems[] = [
    {
      key: "events",
      part: "runEvents",
      count: eventTexts.length,
      item: (index) => `{"id":${JSON.stringify(`${id}:${index + 1}`)},"runId":${runId},${eventTexts[index]!.slice(1, -1)},"createdAt":${JSON.stringify(eventTimes[index])}}`,
    },
    { key: "toolCalls", part: "runToolCalls", count: toolCalls.length, item: (index) => toolCalls[index]! },
    { key: "steps", part: "runSteps", count: steps.length, item: (index) => steps[index]! },
  ];
  // A large checkpoint (a continuation) has a row of its own: the run's row holds its record, which can be large too.
  const checkpoint = rest.checkpoint === null ? undefined : JSON.stringify(rest.checkpoint);
  const checkpointApart = checkpoint !== undefined && checkpoint.length > rowChars / 2;
  const head = JSON.stringify(checkpointApart ? { ...rest, checkpoint: null } : rest);
  let room = rowChars - head.length;
  const inRow = lists.map(({ count, item }) => {
    const items: string[] = [];
    while (items.length < count) {
      const next = item(items.length);
      if (next.length + 1 > room) break;
      room -= next.length + 1;
      items.push(next);
    }
    return items;
  });
  yield `["runs",{${lists.map(({ key }, index) => `"${key}":[${inRow[index]!.join(",")}]`).join(",")},${head.slice(1)}]`;
  if (checkpointApart) yield `["runCheckpoint",{"runId":${runId},"checkpoint":${checkpoint}}]`;
  for (const [index, { key, part, count, item }] of lists.entries()) {
    const partLine = (items: string[]) => `["${part}",{"runId":${runId},"${key}":[${items.join(",")}]}]`;
    yield* packed(inRow[index]!.length, count, item, rowChars, partLine);
  }
}

/** A conversation's lines (see snapshotLines): `["conversations",[id,[...]]]`, then its part rows. */
function* snapshotConversationLines([id, messages]: [string, ConversationMessage[]], rowChars: number): Generator<string> {
  const key = JSON.stringify(id);
  let first = true;
  const line = (items: string[]) => {
    const text = `["${first ? "conversations" : "conversationMessages"}",[${key},[${items.join(",")}]]]`;
    first = false;
    return text;
  };
  yield* packed(0, messages.length, (index) => JSON.stringify(messages[index]), rowChars, line);
  // A conversation without messages still has its row.
  if (first) yield line([]);
}

/**
 * The lines `line` makes of items `from` to `count`, each of as many items as fit in `rowChars`
 * characters, or of one item alone that is longer. Each item is made as it is packed.
 */
function* packed(from: number, count: number, item: (index: number) => string, rowChars: number, line: (items: string[]) => string): Generator<string> {
  let items: string[] = [];
  let chars = 0;
  for (let index = from; index < count; index += 1) {
    const next = item(index);
    if (items.length > 0 && chars + next.length > rowChars) {
      yield line(items);
      items = [];
      chars = 0;
    }
    items.push(next);
    chars += next.length + 1;
  }
  if (items.length > 0) yield line(items);
}

export function skillKey(agentId: string, name: string): string {
  return JSON.stringify([agentId, name]);
}

/** Put `value` at `key`; the bytes superseded: `opBytes` when it replaced a record. */
/** The run.created event a run.create op implies: the record's identity, status and input, at its creation time. */
export function createdEventOf(run: RunRecord): RunEvent {
  return {
    id: `${run.id}:1`,
    runId: run.id,
    seq: 1,
    type: "run.created",
    data: {
      agentId: run.agentId,
      agentRevision: run.agentRevision,
      conversationId: run.conversationId,
      modelSpec: run.modelSpec,
      status: run.status,
      input: run.input as unknown as JsonValue,
    },
    createdAt: run.createdAt,
  };
}

function replaced<T>(table: KeyedTable<T>, key: string, value: T, opBytes: number): number {
  const had = table.has(key);
  table.set(key, value);
  return had ? opBytes : 0;
}

/** What `replaced` and `deleted` need of a table: a Map, or a store's own keyed index. */
interface KeyedTable<T> {
  has(key: string): boolean;
  get(key: string): T | undefined;
  set(key: string, value: T): unknown;
  delete(key: string): boolean;
}

/** Delete `key`; the bytes superseded: the deleted record's own size, and the delete's. */
function deleted<T>(table: KeyedTable<T>, key: string, opBytes: number): number {
  const record = table.get(key);
  if (record === undefined) return opBytes;
  table.delete(key);
  return JSON.stringify(record).length + opBytes;
}
