import { randomUUID } from "node:crypto";
import {
  AssemblyLineError,
  type AutomationInfo,
  type CreateAutomationInput,
  type JsonValue,
  type NormalizedSchedule,
  type RuntimeLogger,
  type ScheduleRecord,
  type ScheduleStateStore,
  type UpdateAutomationInput,
  isSameSchedule,
  MAX_TIMER_MS,
} from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";
import type { AutomationManifestEntry } from "../compiler/manifest.js";
import { NEVER, countMissed, firstDueTime, lastDueBy, nextDueAfter, normalizeSchedule, schedulesEqual } from "./schedule-time.js";

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** What follows `automation:<agentId>:` in the id of an automation's row: its source and its name (which holds no ":"). */
const ROW_ID_TAIL = /^(static|dynamic):[^:]+$/;
/**
 * Due times missed by more than this collapse into one run (see docs: missed
 * due times). Longer than the scheduler's default lease (60 s), so the due
 * times after one a dead replica was dispatching still run each, once its lease
 * expires, instead of collapsing into one run. A scheduler's lease must stay
 * below it (the local scheduler refuses to start otherwise).
 */
export const DEFAULT_CATCH_UP_MS = 180_000;

/** What a schedule row of an automation carries in its payload. */
interface AutomationPayload {
  kind: "automation";
  agentId: string;
  name: string;
  source: "static" | "dynamic";
  schedule: NormalizedSchedule;
  message: string;
  conversationId: string | null;
  enabled: boolean;
  paused: boolean;
  /** Dynamic rows: new for every (re)creation, so a deleted and recreated automation never reuses a run key. Static rows: "static". */
  instance: string;
  /** Digest of the definition, to see whether a static file changed. */
  digest: string;
}

/**
 * A change of a dynamic automation, decided but not written: the row to write and its next due
 * time. Plain JSON, so a tool call's step can record it and a call run again writes the same row.
 */
export interface PlannedAutomation {
  payload: AutomationPayload;
  nextRunAt: string;
  /**
   * An update's: the fields its patch gave. Applied, they are set on the row stored then (another
   * host may have changed it since the plan), the other fields kept as stored. Left out (a create,
   * or an update planned before the field), the whole planned row is written.
   */
  changed?: UpdateField[];
}

type UpdateField = "schedule" | "message" | "conversationId" | "enabled";

/** Tries of a change whose row another writer keeps changing between the read and the write, before it fails. */
const REWRITE_TRIES = 8;

export interface DispatchOptions {
  /** A host-forced model for the runs (dev --model). */
  model?: string;
}

/** Whether a schedule row is an automation's (rather than a host's own schedule). */
export function isAutomationSchedule(record: Pick<ScheduleRecord, "payload">): boolean {
  return automationPayload(record.payload) !== undefined;
}

/** An automation as `Automations` answers it (listed, got, created, changed), `held` included. */
export type ListedAutomation = AutomationInfo;

/** A run an automation's due time started (or found already started). */
export interface AutomationRun {
  runId: string;
  created: boolean;
  conversationId: string | null;
  dueAt: string;
}

export interface AutomationsParts {
  store: ScheduleStateStore;
  agentId: string;
  statics: AutomationManifestEntry[];
  /** runtime.submit: accept a run durably, deduplicated by idempotency key. */
  submit(input: { message: string; conversationId?: string; idempotencyKey: string; metadata: Record<string, JsonValue>; model?: string }): Promise<{ runId: string; created: boolean }>;
  logger: RuntimeLogger;
  catchUpMs?: number;
  now?: () => Date;
  /**
   * agent.ts dynamicAutomations.dynamic (default true). Off, the dynamic (run-created) rows are
   * held: kept and listed, but each due time passes without a run.
   */
  dynamic?: boolean;
}

/**
 * The agent's automations, kept as rows of the schedules facet: static ones
 * from automations/ (synced at host start), dynamic ones created at run time.
 * A scheduler leases due rows and calls `dispatchDue`; each due time of each
 * automation starts one run, keyed `automation:<row>:<instance>:<due time>`,
 * so a due time dispatched twice (a replica dying mid-dispatch, a stalled
 * lease) still starts one run.
 *
 * Missed due times: a due time at most `catchUpMs` late still runs (each of
 * them: a replica that died holding the lease loses nothing); when the oldest
 * missed one is later than that (the host was down), they all collapse into
 * one run, keyed as the last of them, and the schedule continues from the next
 * due time after now. Keyed so, the collapsed run is the run a dead replica
 * already started for that last time, if it did: a run exists for it only when
 * every due time up to it was started, so nothing runs twice, and nothing
 * missed after it goes without a run.
 */
export class Automations {
  private readonly now: () => Date;
  /**
   * RuntimeOptions.automationCatchUpMs, checked (default DEFAULT_CATCH_UP_MS). A host passes it to
   * its scheduler's start (`SchedulerStartOptions.automationCatchUpMs`) so a lease not below it is refused.
   */
  readonly catchUpMs: number;
  /** Whether the warning that the scheduler's lease is not below `catchUpMs` was logged. */
  private warnedLease = false;
  /** This build's automations/ by name, with the digest of each definition. */
  private readonly statics: Map<string, { entry: AutomationManifestEntry; digest: string }>;
  /** Whether run-created automations run (agent.ts dynamicAutomations.dynamic). */
  private readonly dynamicRuns: boolean;
  /** Held automations whose skipped due time was warned of (once each; later ones are logged at debug). */
  private readonly warnedHeld = new Set<string>();
  private warnedHeldAtSync = false;

  constructor(private readonly parts: AutomationsParts) {
    this.now = parts.now ?? (() => new Date());
    this.catchUpMs = checkCatchUpMs(parts.catchUpMs);
    this.statics = new Map(parts.statics.map((entry) => [entry.name, { entry, digest: digestJson(staticDefinition(entry) as unknown as JsonValue) }]));
    this.dynamicRuns = parts.dynamic ?? true;
  }

  /** An automation as its row stands, as every answer shows it. */
  private describe(record: Pick<ScheduleRecord, "enabled" | "nextRunAt">, payload: AutomationPayload): ListedAutomation {
    const rests = !record.enabled || record.nextRunAt === NEVER.toISOString();
    return {
      name: payload.name,
      source: payload.source,
      schedule: payload.schedule,
      message: payload.message,
      conversationId: payload.conversationId,
      enabled: payload.enabled,
      paused: payload.paused,
      nextRunAt: rests ? null : record.nextRunAt,
      held: payload.source === "dynamic" && !this.dynamicRuns,
    };
  }

  /** The schedule row id of an automation of this agent. */
  rowId(source: "static" | "dynamic", name: string): string {
    return `automation:${this.parts.agentId}:${source}:${name}`;
  }

  /**
   * Write the agent's automations/ into the store: new ones from their first
   * due time, changed ones re-timed, removed ones deleted. An operator's pause
   * and an unchanged schedule's next due time survive. Several replicas may
   * sync at once: unchanged definitions are not rewritten. A file takes its
   * name from a dynamic automation of that name: names are unique, and the
   * build is what the operator deployed.
   */
  async syncStatic(): Promise<void> {
    const rows = await this.rows();
    const now = this.now();
    const wanted = new Set<string>();
    const written = new Set<string>();
    for (const { entry, digest } of this.statics.values()) {
      const id = this.rowId("static", entry.name);
      wanted.add(id);
      const dynamic = rows.get(this.rowId("dynamic", entry.name));
      if (dynamic) await this.dropDynamicFor(entry.name, dynamic.record);
      const listed = rows.get(id);
      if (listed && listed.payload.digest === digest) continue;
      written.add(id);
      // Decided on the row as stored at the write: an operator's pause made meanwhile is kept.
      await this.rewrite(id, entry.name, (existing) => {
        if (existing?.payload && existing.payload.digest === digest) return { answer: this.describe(existing.record, existing.payload) };
        const sameSchedule = existing?.payload !== undefined && schedulesEqual(existing.payload.schedule, entry.schedule);
        const paused = existing?.payload?.paused ?? false;
        // A row that rested (enabled: false) and now may run continues from its next due time after now, not from where it stopped.
        // A changed file keeps a due time passed and not yet run, as an update does: it was owed before the change.
        const next = !existing ? firstDueTime(entry.schedule, now) : !sameSchedule ? this.rescheduleTime(entry.schedule, existing.record) : !existing.record.enabled && entry.enabled && !paused ? this.resumeTime(entry.schedule, new Date(existing.record.nextRunAt)) : new Date(existing.record.nextRunAt);
        if (entry.schedule.kind === "at" && next.getTime() === NEVER.getTime() && !sameSchedule) {
          this.parts.logger.warn({ event: "automation.one_shot_past", automation: entry.name, at: entry.schedule.at }, `automations/${entry.name}.ts runs once at ${entry.schedule.at}, already past: it rests and does not run`);
        }
        return { payload: this.staticPayload(entry.name, paused)!, nextRunAt: next };
      });
    }
    for (const [id, { record, payload }] of rows) {
      if (payload.source === "static" && !wanted.has(id)) await this.dropStatic(record);
      // A row written before schedules had an agent: any agent's scheduler could claim it until it names its own.
      else if (!written.has(id) && (record.agentId ?? null) === null) await this.nameAgent(id);
    }
    this.warnHeldAtSync(rows);
  }

  /** Say once, at the host's sync, which run-created automations this build holds. */
  private warnHeldAtSync(rows: Map<string, { payload: AutomationPayload }>): void {
    if (this.dynamicRuns || this.warnedHeldAtSync) return;
    const held = [...rows.values()].filter(({ payload }) => payload.source === "dynamic" && !this.statics.has(payload.name)).map(({ payload }) => payload.name).sort();
    if (held.length === 0) return;
    this.warnedHeldAtSync = true;
    this.parts.logger.warn(
      { event: "automation.held", automations: held },
      `${held.length} run-created automation${held.length === 1 ? " is" : "s are"} held because agent.ts dynamicAutomations.dynamic is off (${held.join(", ")}): kept, but their due times pass without a run until it is on again`,
    );
  }

  /** The row payload of this build's file `name` (undefined when the build has none), as the sync writes it. */
  private staticPayload(name: string, paused: boolean): AutomationPayload | undefined {
    const found = this.statics.get(name);
    if (!found) return undefined;
    return {
      kind: "automation",
      agentId: this.parts.agentId,
      name,
      source: "static",
      ...staticDefinition(found.entry),
      paused,
      // Fixed for static rows: replicas syncing at once write the same row, and the same due time the same run key.
      instance: "static",
      digest: found.digest,
    };
  }

  /**
   * This build's automations/ files that have no row in the store yet (no host of the agent has
   * synced since they were added), each as the sync would write it; nothing is written. Names a
   * row already has are left out: the store's row is what hosts run. For a listing (CLI
   * `automations list`) that must not write this build over the rows the running hosts' build wrote.
   */
  async notYetStored(): Promise<ListedAutomation[]> {
    const rows = await this.rows();
    const stored = new Set([...rows.values()].map((row) => row.payload.name));
    const now = this.now();
    return [...this.statics.keys()]
      .filter((name) => !stored.has(name))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((name) => {
        const payload = this.staticPayload(name, false)!;
        return this.describe(this.row(payload, firstDueTime(payload.schedule, now)), payload);
      });
  }

  /**
   * A static row of a file this build lacks, removed only as it was read: one another writer
   * rewrote meanwhile (a host of a build that has the file, syncing at the same moment) is left to
   * the next sync, or to `otherBuildRow` once no host of that build dispatches it.
   */
  private async dropStatic(record: ScheduleRecord): Promise<void> {
    const { store } = this.parts;
    if (store.deleteScheduleIf) await store.deleteScheduleIf(withoutLease(record));
    else await store.deleteSchedule(record.id);
  }

  /**
   * A dynamic automation whose name a file now has: removed, its definition logged so it can be
   * made again under another name. The definition logged is the one deleted: a row changed since
   * the sync read it (an update on another host) is read again.
   */
  private async dropDynamicFor(name: string, read: ScheduleRecord): Promise<void> {
    const removed = await this.remove(read.id, name, () => true, read);
    const payload = removed && automationPayload(removed.payload);
    if (!payload) return;
    this.parts.logger.warn(
      { event: "automation.name_taken_by_file", automation: name, removed: { schedule: payload.schedule, message: payload.message, conversationId: payload.conversationId, enabled: payload.enabled, paused: payload.paused } as unknown as JsonValue },
      `automations/${name}.ts takes the name "${name}" from the dynamic automation of that name, which is removed (its definition is in this entry); create it again under another name if it is still wanted`,
    );
  }

  async list(): Promise<ListedAutomation[]> {
    return [...(await this.rows()).values()].map(({ record, payload }) => this.describe(record, payload)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async get(name: string): Promise<ListedAutomation> {
    const { record, payload } = await this.require(name);
    return this.describe(record, payload);
  }

  /**
   * Operator pause/resume (CLI): a paused automation is never due; resuming continues from the next
   * due time after now. Only the pause changes: the rest of the row is kept as stored, whatever
   * this build defines. A file of this build that has no row yet (no host has synced since it was
   * added) is written paused, only if still absent, so that it never runs until resumed; resuming
   * one writes nothing (it is not paused).
   */
  async setPaused(name: string, paused: boolean): Promise<ListedAutomation> {
    const rows = await this.rows();
    const found = rows.get(this.rowId("dynamic", name)) ?? rows.get(this.rowId("static", name));
    const fromBuild = found ? undefined : this.staticPayload(name, paused);
    if (!found && !fromBuild) await this.require(name);
    return this.rewrite(found ? found.record.id : this.rowId("static", name), name, async (stored) => {
      if (!stored && fromBuild) {
        const nextRunAt = firstDueTime(fromBuild.schedule, this.now());
        return paused ? { payload: fromBuild, nextRunAt } : { answer: this.describe(this.row(fromBuild, nextRunAt), fromBuild) };
      }
      if (!stored?.payload) {
        // Deleted since it was found: not written back. Not found now, or the automation of its name found now is the one paused.
        await this.require(name);
        return { answer: await this.setPaused(name, paused) };
      }
      const { record, payload } = stored;
      if (payload.paused === paused) return { answer: this.describe(record, payload) };
      const next = paused ? new Date(record.nextRunAt) : this.resumeTime(payload.schedule, new Date(record.nextRunAt));
      return { payload: { ...payload, paused }, nextRunAt: next };
    });
  }

  /** Start one run of an automation now, outside its schedule (CLI `automations run`). */
  async runNow(name: string, options: DispatchOptions = {}): Promise<AutomationRun> {
    const rows = await this.rows();
    const stored = rows.get(this.rowId("dynamic", name)) ?? rows.get(this.rowId("static", name));
    // A file of this build with no row yet runs as the sync would write it, without writing it.
    const payload = stored?.payload ?? this.staticPayload(name, false) ?? (await this.require(name)).payload;
    const dueAt = this.now().toISOString();
    return this.submit(this.rowId(payload.source, payload.name), payload, dueAt, `manual:${randomUUID()}`, 0, options);
  }

  /** Throws what create() would refuse for its input (a name taken included), without writing. */
  async check(input: CreateAutomationInput): Promise<void> {
    const checked = checkInput(input);
    this.refusePastOneShot(checked.name, checked.schedule);
    await this.refuseTakenName(checked.name);
  }

  /** Throws when `name` is not a dynamic automation or the patch is malformed, without writing. */
  async checkUpdate(name: string, patch: UpdateAutomationInput): Promise<void> {
    const { payload } = await this.requireDynamic(name, "change");
    refuseUnknownFields(patch, UPDATE_FIELDS, `update of automation "${name}"`);
    refuseNullFields(patch, name);
    const checked = checkInput({ name, schedule: patch.schedule as never, message: patch.message ?? payload.message, enabled: patch.enabled ?? payload.enabled }, payload.schedule);
    if (patch.schedule !== undefined) this.refusePastOneShot(name, checked.schedule);
  }

  async create(input: CreateAutomationInput): Promise<ListedAutomation> {
    return this.applyCreate(await this.planCreate(input));
  }

  /** The row create() writes for `input`, checked as create() checks it (a name taken included), without writing. */
  async planCreate(input: CreateAutomationInput): Promise<PlannedAutomation> {
    const checked = checkInput(input);
    this.refusePastOneShot(checked.name, checked.schedule);
    await this.refuseTakenName(checked.name);
    const payload: AutomationPayload = { kind: "automation", agentId: this.parts.agentId, source: "dynamic", ...checked, paused: false, instance: randomUUID(), digest: "" };
    return { payload: { ...payload, digest: digestDefinition(payload) }, nextRunAt: firstDueTime(checked.schedule, this.now()).toISOString() };
  }

  /**
   * Write a planned create. The row found already there with the plan's own instance is this
   * plan's, written before a crash: it is answered as written then, not refused as a name taken.
   */
  async applyCreate(plan: PlannedAutomation): Promise<ListedAutomation> {
    try {
      // Inserted only if absent where the store can: of two concurrent creates of one name, one fails.
      return await this.write(plan.payload, new Date(plan.nextRunAt), { onlyIfAbsent: true });
    } catch (error) {
      const stored = await this.parts.store.getSchedule(this.rowId("dynamic", plan.payload.name));
      if (stored && automationPayload(stored.payload)?.instance === plan.payload.instance) return this.describePlan(plan);
      throw error;
    }
  }

  private async refuseTakenName(name: string): Promise<void> {
    const rows = await this.rows();
    // A file of this build counts even when its row is missing (an older build's host removed it during a rollout).
    if (this.statics.has(name) || rows.has(this.rowId("static", name)) || rows.has(this.rowId("dynamic", name))) throw nameTaken(name);
  }

  /** A one-shot time already past would run at once, as if it had been missed: refused, so a wrong date is seen. */
  private refusePastOneShot(name: string, schedule: NormalizedSchedule): void {
    const now = this.now();
    if (schedule.kind !== "at" || Date.parse(schedule.at) >= now.getTime()) return;
    throw new AssemblyLineError("AL_ERR_AUTOMATION_SCHEDULE", `automation "${name}": at: ${schedule.at} is already past (it is ${now.toISOString()})`, {
      fix: "Give a time still to come, with its offset; check the year and the time zone.",
    });
  }

  async update(name: string, patch: UpdateAutomationInput): Promise<ListedAutomation> {
    return this.applyUpdate(await this.planUpdate(name, patch));
  }

  /** The row update() writes for `patch`, from the row stored now, without writing. */
  async planUpdate(name: string, patch: UpdateAutomationInput): Promise<PlannedAutomation> {
    const { record, payload } = await this.requireDynamic(name, "update");
    refuseUnknownFields(patch, UPDATE_FIELDS, `update of automation "${name}"`);
    refuseNullFields(patch, name);
    const checked = checkInput({ name: payload.name, schedule: patch.schedule as never, message: patch.message ?? payload.message, ...(patch.conversationId !== undefined ? { conversationId: patch.conversationId } : payload.conversationId ? { conversationId: payload.conversationId } : {}), enabled: patch.enabled ?? payload.enabled }, payload.schedule);
    if (patch.schedule !== undefined) this.refusePastOneShot(name, checked.schedule);
    // The stored schedule given again (the whole automation passed back with a new message) is no change.
    const rescheduled = !schedulesEqual(checked.schedule, payload.schedule);
    const enabling = !record.enabled && checked.enabled && !payload.paused;
    // Re-enabled, it continues from its next due time after now: the due times it rested through are not owed.
    const next = rescheduled ? this.rescheduleTime(checked.schedule, record) : enabling ? this.resumeTime(checked.schedule, new Date(record.nextRunAt)) : new Date(record.nextRunAt);
    const updated: AutomationPayload = { ...payload, ...checked };
    const changed = UPDATE_FIELDS.filter((field) => (patch as Record<string, unknown>)[field] !== undefined);
    return { payload: { ...updated, digest: digestDefinition(updated) }, nextRunAt: next.toISOString(), changed };
  }

  /**
   * Write a planned update, and answer it as planned. Written again after a crash, it writes the
   * same row. The automation it updated gone since (deleted, or deleted and created again under its
   * name) is not written: the update came before the delete, and a row written now would bring the
   * deleted automation back, or replace the new one.
   */
  async applyUpdate(plan: PlannedAutomation): Promise<ListedAutomation> {
    return this.rewrite(this.rowId("dynamic", plan.payload.name), plan.payload.name, (stored) => {
      if (stored?.payload?.instance !== plan.payload.instance) return { answer: this.describePlan(plan) };
      if (!plan.changed) return { payload: plan.payload, nextRunAt: new Date(plan.nextRunAt) };
      // The patch set on the row as stored now: another host's change made since the plan stays.
      const { record, payload } = stored;
      const updated: AutomationPayload = { ...payload };
      for (const field of plan.changed) (updated as unknown as Record<string, unknown>)[field] = plan.payload[field];
      // Re-timed as the plan was, from the row stored now: a new schedule from its plan (unless the row now
      // holds a due time passed and not run, kept); the stored schedule given again, not re-timed; re-enabled, from now.
      const enabling = !record.enabled && updated.enabled && !updated.paused;
      const rescheduled = plan.changed.includes("schedule") && !schedulesEqual(updated.schedule, payload.schedule);
      const next = rescheduled ? this.rescheduleTime(updated.schedule, record, new Date(plan.nextRunAt)) : enabling ? this.resumeTime(updated.schedule, new Date(record.nextRunAt)) : new Date(record.nextRunAt);
      return { payload: { ...updated, digest: digestDefinition(updated) }, nextRunAt: next };
    });
  }

  /** The instance of dynamic automation `name` (new at each creation), or null when there is none. */
  async dynamicInstance(name: string): Promise<string | null> {
    const stored = await this.parts.store.getSchedule(this.rowId("dynamic", name));
    return (stored && automationPayload(stored.payload)?.instance) ?? null;
  }

  async delete(name: string): Promise<{ deleted: boolean }> {
    const found = (await this.rows()).get(this.rowId("dynamic", name));
    if (!found) {
      if ((await this.rows()).has(this.rowId("static", name))) await this.requireDynamic(name, "delete");
      return { deleted: false };
    }
    // The creation read is deleted, never one made since under its name: if another writer deleted it
    // meanwhile (and maybe created the name again), this call deleted nothing.
    const removed = await this.remove(found.record.id, name, (stored) => stored.payload?.instance === found.payload.instance, found.record);
    return { deleted: removed !== undefined };
  }

  /**
   * Delete dynamic automation `name` if it is still the creation `instance`. One gone since, or
   * replaced by a new creation of its name, is not deleted (the new one is not the one asked about),
   * and the answer is still `deleted: true`: the automation there before is gone.
   */
  async deleteInstance(name: string, instance: string): Promise<{ deleted: true }> {
    await this.remove(this.rowId("dynamic", name), name, (stored) => stored.payload?.instance === instance);
    return { deleted: true };
  }

  private describePlan(plan: PlannedAutomation): ListedAutomation {
    const { payload } = plan;
    return this.describe({ enabled: payload.enabled && !payload.paused, nextRunAt: plan.nextRunAt }, payload);
  }

  /**
   * The scheduler's dispatch for a leased row: start the run of each due time
   * (missed-time policy above) and say where the row moves next.
   */
  async dispatchDue(claimed: ScheduleRecord, options: DispatchOptions = {}): Promise<{ nextRunAt: Date; runs: AutomationRun[] }> {
    const payload = automationPayload(claimed.payload);
    if (!payload || payload.agentId !== this.parts.agentId) {
      throw new AssemblyLineError("AL_ERR_AUTOMATION_NOT_FOUND", `schedule ${claimed.id} is not an automation of agent ${this.parts.agentId}`, {
        fix: "Use a scheduler and state adapter that claim by agent (claimDueSchedules' agentId); this row is left to its own agent's scheduler.",
      });
    }
    const now = this.now();
    this.warnLongLease(claimed, now);
    const first = new Date(claimed.nextRunAt);
    if (first.getTime() > now.getTime()) return { nextRunAt: first, runs: [] };
    if (payload.source === "static" && this.statics.get(payload.name)?.digest !== payload.digest) return this.otherBuildRow(claimed, payload, first, now);
    if (payload.source === "dynamic" && !this.dynamicRuns) return this.skipHeld(claimed, payload, first, now);
    const runs: AutomationRun[] = [];
    if (now.getTime() - first.getTime() > this.catchUpMs) {
      // The host was down: one run stands for every missed due time, then back on schedule. It takes the key
      // of the last of them: a replica that started the runs up to that one and died before moving the row on
      // (or whose completeScheduleRun failed) left nothing missed, and this finds its run instead of starting
      // one more; one that started only earlier times leaves the later ones owed, and this run is theirs. A
      // retry of this dispatch finds this run again, unless due times passed since, which it then runs.
      const last = lastDueBy(payload.schedule, first, now);
      const missed = countMissed(payload.schedule, first, now);
      const run = await this.submit(claimed.id, payload, first.toISOString(), last.toISOString(), missed.count, options);
      if (run.created) {
        this.parts.logger.warn(
          { event: "automation.missed", automation: payload.name, firstMissed: first.toISOString(), lastMissed: last.toISOString(), missed: missed.count, ...(missed.atLeast ? { missedAtLeast: true } : {}) },
          "automation missed due times while no scheduler ran; running it once",
        );
      }
      runs.push(run);
      return { nextRunAt: await this.keepNewer(claimed, nextDueAfter(payload.schedule, now) ?? NEVER, now), runs };
    }
    let due: Date | null = first;
    let ran = first;
    while (due && due.getTime() <= now.getTime()) {
      runs.push(await this.submit(claimed.id, payload, due.toISOString(), due.toISOString(), 1, options));
      ran = due;
      due = nextDueAfter(payload.schedule, due);
    }
    return { nextRunAt: await this.keepNewer(claimed, due ?? NEVER, ran), runs };
  }

  /**
   * Warn once when the scheduler leases rows for `catchUpMs` or longer: a dispatch that failed (or
   * whose completeScheduleRun failed) is then retried only once its due time is past the catch-up
   * window, so the due times a replica left collapse into one run instead of running each. The
   * local scheduler refuses such a lease at start when the host passes it automationCatchUpMs; this
   * catches any other scheduler, and a host that does not pass it, from the lease of the first row.
   */
  private warnLongLease(claimed: ScheduleRecord, now: Date): void {
    if (this.warnedLease || !claimed.lease) return;
    const leaseMs = Date.parse(claimed.lease.expiresAt) - now.getTime();
    if (!(leaseMs >= this.catchUpMs)) return;
    this.warnedLease = true;
    this.parts.logger.warn(
      { event: "automation.lease_not_below_catch_up", scheduleId: claimed.id, leaseMsAtLeast: leaseMs, automationCatchUpMs: this.catchUpMs },
      `the scheduler leased a schedule for at least ${leaseMs} ms, not less than automationCatchUpMs (${this.catchUpMs} ms): a failed dispatch is retried only after the catch-up window, so the due times it left collapse into one run instead of running each; set the scheduler's leaseMs below automationCatchUpMs (or raise automationCatchUpMs)`,
    );
  }

  /**
   * A static row this build does not define as stored (a file it lacks, or
   * one it defines otherwise): another build wrote it. During a rolling deploy
   * both builds' hosts dispatch, and a host of the old build that restarts
   * syncs its files again. Such a row starts nothing here. Within
   * `catchUpMs` of its due time it is left as it is, for a host of the build
   * that wrote it; later, no such host is dispatching (it is gone), and this
   * build's automations/ take over: synced again, the row is rewritten to
   * this build's definition, or removed when this build has no such file.
   * So the two builds never fight for longer than both run.
   */
  private async otherBuildRow(claimed: ScheduleRecord, payload: AutomationPayload, first: Date, now: Date): Promise<{ nextRunAt: Date; runs: AutomationRun[] }> {
    if (now.getTime() - first.getTime() <= this.catchUpMs) return { nextRunAt: first, runs: [] };
    const defined = this.statics.has(payload.name);
    this.parts.logger.warn(
      { event: "automation.other_build", automation: payload.name, dueAt: first.toISOString(), action: defined ? "rewritten" : "removed" },
      `static automation "${payload.name}" was written by another build of the agent and no host of it ran it; ${defined ? "this build's automations/ definition replaces it" : "this build has no such file, so it is removed"} without running the other build's`,
    );
    await this.syncStatic();
    const current = await this.parts.store.getSchedule(claimed.id);
    return { nextRunAt: current ? new Date(current.nextRunAt) : NEVER, runs: [] };
  }

  /**
   * A run-created automation due while agent.ts turns dynamicAutomations.dynamic off: no run, and
   * the row moves on to its next due time after now, as a missed one does (a one-shot rests for
   * good), so it is not claimed again at every poll. Kept, it runs again once dynamic is on.
   */
  private async skipHeld(claimed: ScheduleRecord, payload: AutomationPayload, first: Date, now: Date): Promise<{ nextRunAt: Date; runs: AutomationRun[] }> {
    const nextRunAt = await this.keepNewer(claimed, nextDueAfter(payload.schedule, now) ?? NEVER, now);
    const fields = { event: "automation.held", automation: payload.name, dueAt: first.toISOString(), nextRunAt: nextRunAt.getTime() === NEVER.getTime() ? null : nextRunAt.toISOString() };
    const message = `run-created automation "${payload.name}" was due but started no run: agent.ts dynamicAutomations.dynamic is off, so it is held until it is on again`;
    if (this.warnedHeld.has(payload.name)) this.parts.logger.debug(fields, message);
    else {
      this.warnedHeld.add(payload.name);
      this.parts.logger.warn(fields, message);
    }
    return { nextRunAt, runs: [] };
  }

  /**
   * Where the row moves after a dispatch: `computed`, unless the row was
   * rewritten since it was claimed (an update re-timed it, a pause or resume,
   * a sync of a changed file, another replica after this lease expired). The
   * scheduler completes a row only as it was claimed (`completeScheduleRun`'s
   * `claimed`), so such an edit is not undone by the old schedule's next due
   * time. An edit that kept the due time this dispatch ran (an update of the
   * message, or a new schedule given while that due time was already passed)
   * is moved on here, from `ranThrough` (the last due time this dispatch
   * started runs for) on the schedule stored now, rather than being dispatched
   * again for a due time already run; only if it is still the row read, so an
   * edit landing after this read is kept (and dispatched again, which finds
   * its runs already started).
   */
  private async keepNewer(claimed: ScheduleRecord, computed: Date, ranThrough: Date): Promise<Date> {
    const { store } = this.parts;
    const current = await store.getSchedule(claimed.id);
    if (!current) return computed;
    const same = current.nextRunAt === claimed.nextRunAt && current.enabled === claimed.enabled && digestJson(current.payload) === digestJson(claimed.payload);
    if (same) return computed;
    const edited = automationPayload(current.payload);
    const keptDueTime = Date.parse(current.nextRunAt) === Date.parse(claimed.nextRunAt) && current.enabled && edited?.instance === automationPayload(claimed.payload)?.instance;
    if (!keptDueTime) return new Date(current.nextRunAt);
    const next = nextDueAfter(edited!.schedule, ranThrough) ?? NEVER;
    // Without replaceSchedule, the completion moves it (a store comparing the claimed time alone) or the next dispatch does.
    if (store.replaceSchedule) await store.replaceSchedule(withoutLease(current), { ...withoutLease(current), nextRunAt: next.toISOString() });
    return next;
  }

  private async submit(rowId: string, payload: AutomationPayload, dueAt: string, keyTime: string, missed: number, options: DispatchOptions): Promise<AutomationRun> {
    const { runId, created } = await this.parts.submit({
      ...(options.model ? { model: options.model } : {}),
      message: payload.message,
      ...(payload.conversationId ? { conversationId: payload.conversationId } : {}),
      idempotencyKey: `automation:${rowId}:${payload.instance}:${keyTime}`,
      metadata: { automation: { name: payload.name, source: payload.source, dueAt, ...(missed > 1 ? { missed } : {}) } },
    });
    return { runId, created, conversationId: payload.conversationId, dueAt };
  }

  /**
   * Where a row given a new schedule goes next. A due time already passed and not yet run (waiting
   * for the next poll, or leased by a dispatch that failed and waits out its lease) is kept: it was
   * owed before the change, and the run for it (keyed by that time) starts once, with the new
   * definition, the schedule continuing from there on its new series. Otherwise `planned` (an
   * update's plan, when still ahead) or the new schedule's first due time after now. A row that
   * rests (paused, disabled) owes nothing.
   */
  private rescheduleTime(schedule: NormalizedSchedule, stored: ScheduleRecord, planned?: Date): Date {
    const now = this.now();
    const storedTime = new Date(stored.nextRunAt);
    if (stored.enabled && storedTime.getTime() <= now.getTime()) return storedTime;
    if (planned && planned.getTime() > now.getTime()) return planned;
    return firstDueTime(schedule, now);
  }

  private resumeTime(schedule: NormalizedSchedule, stored: Date): Date {
    const now = this.now();
    if (stored.getTime() > now.getTime()) return stored;
    // A one-shot whose time passed while it rested is not run: it rests for good.
    return nextDueAfter(schedule, now) ?? NEVER;
  }

  /**
   * Write this agent's id on a row written without one, as the row is now: read again just before,
   * and left for the next sync while leased (a dispatch under way moves it; writing the copy read
   * before would move it back).
   */
  private async nameAgent(id: string): Promise<void> {
    const current = await this.parts.store.getSchedule(id);
    if (!current || (current.agentId ?? null) !== null || current.lease !== null) return;
    const named = { ...withoutLease(current), agentId: this.parts.agentId };
    // Only if unchanged since the read: a row changed meanwhile is named at the next sync.
    if (this.parts.store.replaceSchedule) await this.parts.store.replaceSchedule(withoutLease(current), named);
    else await this.parts.store.upsertSchedule(named);
  }

  /**
   * Change the row `id` as `change` decides from the row stored now (undefined: none; `payload`
   * undefined: not an automation's), written only if the row is still the one read
   * (`replaceSchedule`, or `insertSchedule` where there was none). A row another writer changed
   * meanwhile (an update on another host, a pause, a sync, a dispatch moving it on) is read again
   * and decided again, so neither change is lost, and a row deleted meanwhile is not written back
   * unless `change` decides so. A store without `replaceSchedule` is written with `upsertSchedule`.
   */
  private async rewrite(
    id: string,
    name: string,
    change: (stored: { record: ScheduleRecord; payload: AutomationPayload | undefined } | undefined) => RowChange | Promise<RowChange>,
  ): Promise<ListedAutomation> {
    const { store } = this.parts;
    for (let attempt = 0; attempt < REWRITE_TRIES; attempt += 1) {
      const record = await store.getSchedule(id);
      const decided = await change(record ? { record, payload: automationPayload(record.payload) } : undefined);
      if ("answer" in decided) return decided.answer;
      const next = this.row(decided.payload, decided.nextRunAt);
      const answer = this.describe(next, decided.payload);
      if (record && isSameSchedule(record, next)) return answer;
      if (!store.replaceSchedule || (!record && !store.insertSchedule)) {
        await store.upsertSchedule(next);
        return answer;
      }
      if (record ? await store.replaceSchedule(withoutLease(record), next) : await store.insertSchedule!(next)) return answer;
    }
    throw conflict(name, "writing this change; nothing of this change was written");
  }

  /**
   * Delete the row `id` if `wanted` says so of the row stored now (read again unless `first`, just
   * read, is given), only while it is still the row read (`deleteScheduleIf`). A row another writer
   * changed meanwhile (an update, a pause, a dispatch moving it on) is read again and decided again,
   * so a row deleted and written again under its id is never deleted as the one read. The row
   * deleted, or undefined when there was none `wanted`. A store without `deleteScheduleIf` deletes
   * by id whatever the row holds by then.
   */
  private async remove(
    id: string,
    name: string,
    wanted: (stored: { record: ScheduleRecord; payload: AutomationPayload | undefined }) => boolean,
    first?: ScheduleRecord,
  ): Promise<ScheduleRecord | undefined> {
    const { store } = this.parts;
    for (let attempt = 0; attempt < REWRITE_TRIES; attempt += 1) {
      const record = attempt === 0 && first ? first : await store.getSchedule(id);
      if (!record || !wanted({ record, payload: automationPayload(record.payload) })) return undefined;
      if (!store.deleteScheduleIf) {
        await store.deleteSchedule(id);
        return record;
      }
      if (await store.deleteScheduleIf(withoutLease(record))) return record;
    }
    throw conflict(name, "deleting it; it was not deleted");
  }

  /** The schedule row of an automation. */
  private row(payload: AutomationPayload, nextRunAt: Date): Omit<ScheduleRecord, "lease"> {
    return {
      id: this.rowId(payload.source, payload.name),
      agentId: this.parts.agentId,
      intervalMs: payload.schedule.kind === "every" ? payload.schedule.everyMs : 0,
      nextRunAt: nextRunAt.toISOString(),
      payload: payload as unknown as JsonValue,
      enabled: payload.enabled && !payload.paused,
    };
  }

  private async write(payload: AutomationPayload, nextRunAt: Date, options: { onlyIfAbsent?: boolean } = {}): Promise<ListedAutomation> {
    const record = this.row(payload, nextRunAt);
    const { store } = this.parts;
    if (options.onlyIfAbsent && store.insertSchedule) {
      if (!(await store.insertSchedule(record))) throw nameTaken(payload.name);
    } else {
      await store.upsertSchedule(record);
    }
    return this.describe(record, payload);
  }

  /** This agent's automation rows (isOwnRow), by id. */
  private async rows(): Promise<Map<string, { record: ScheduleRecord; payload: AutomationPayload }>> {
    const rows = new Map<string, { record: ScheduleRecord; payload: AutomationPayload }>();
    for (const record of await this.parts.store.listSchedules()) {
      const payload = this.isOwnRow(record) ? automationPayload(record.payload) : undefined;
      if (payload) rows.set(record.id, { record, payload });
    }
    return rows;
  }

  /**
   * Whether schedule row `record` is one of this agent's automations: its id exactly
   * `automation:<agentId>:static|dynamic:<name>`, and the agent stored on it this one (none on a row
   * written before rows had an agent). Agent ids may hold ":" and names never do, so the id is read
   * from its end: `automation:ops:eu:static:report` is agent `ops:eu`'s, never `ops`'s.
   */
  private isOwnRow(record: Pick<ScheduleRecord, "id" | "agentId">): boolean {
    const prefix = `automation:${this.parts.agentId}:`;
    if (!record.id.startsWith(prefix) || !ROW_ID_TAIL.test(record.id.slice(prefix.length))) return false;
    return (record.agentId ?? null) === null || record.agentId === this.parts.agentId;
  }

  private async require(name: string): Promise<{ record: ScheduleRecord; payload: AutomationPayload }> {
    const rows = await this.rows();
    const found = rows.get(this.rowId("dynamic", name)) ?? rows.get(this.rowId("static", name));
    if (!found) {
      const names = [...rows.values()].map((row) => row.payload.name).sort();
      throw new AssemblyLineError("AL_ERR_AUTOMATION_NOT_FOUND", `agent ${this.parts.agentId} has no automation "${name}"`, {
        fix: names.length > 0 ? `Known automations: ${names.join(", ")}.` : "Add automations/<name>.ts and rebuild, or create one through ctx.automationManager.",
      });
    }
    return found;
  }

  private async requireDynamic(name: string, action: string): Promise<{ record: ScheduleRecord; payload: AutomationPayload }> {
    const found = await this.require(name);
    if (found.payload.source !== "dynamic") {
      throw new AssemblyLineError("AL_ERR_AUTOMATION_INPUT", `automation "${name}" comes from automations/${name}.ts; a run cannot ${action} it`, {
        fix: "Change the file and rebuild; operators pause and resume it with `assembly-line automations pause|resume`.",
      });
    }
    return found;
  }
}

/** What a static row takes from its file (and digests, to see whether the file changed). */
function staticDefinition(entry: AutomationManifestEntry): Pick<AutomationPayload, "schedule" | "message" | "conversationId" | "enabled"> {
  return { schedule: entry.schedule, message: entry.message, conversationId: entry.conversationId, enabled: entry.enabled };
}

/**
 * RuntimeOptions.automationCatchUpMs, checked: NaN or Infinity would run every missed due time of
 * an outage one by one, a negative value collapse a due time seconds late.
 */
export function checkCatchUpMs(value: unknown): number {
  if (value === undefined) return DEFAULT_CATCH_UP_MS;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_TIMER_MS) {
    throw new TypeError(
      `automationCatchUpMs is ${typeof value === "string" ? JSON.stringify(value) : String(value)}; give a whole number of milliseconds from 0 to ${MAX_TIMER_MS} (default ${DEFAULT_CATCH_UP_MS}): a due time later than that collapses with the others missed into one run`,
    );
  }
  return value;
}

/** A patch's field left out keeps the stored value; null keeps it too unless refused, so a patch that meant to change it would change nothing. */
function refuseNullFields(patch: UpdateAutomationInput, name: string): void {
  const nulls = (["schedule", "message", "enabled"] as const).filter((field) => (patch as Record<string, unknown>)[field] === null);
  if (nulls.length === 0) return;
  throw new AssemblyLineError("AL_ERR_AUTOMATION_INPUT", `update of automation "${name}": ${nulls.join(", ")} ${nulls.length > 1 ? "are" : "is"} null`, {
    fix: `Leave ${nulls.join(", ")} out to keep ${nulls.length > 1 ? "them" : "it"}, or give a new value; only conversationId takes null (runs then join no conversation).`,
  });
}

function digestDefinition(payload: AutomationPayload): string {
  return digestJson({ schedule: payload.schedule, message: payload.message, conversationId: payload.conversationId, enabled: payload.enabled } as unknown as JsonValue);
}

function automationPayload(value: JsonValue): AutomationPayload | undefined {
  const payload = value as unknown as AutomationPayload | null;
  return payload && typeof payload === "object" && payload.kind === "automation" && typeof payload.name === "string" ? payload : undefined;
}

/** Check what a run asked for; the error names the field and how to fix it. */
function checkInput(
  /** A create's input, or an update's merged with what is stored (where `conversationId: null` clears it). */
  input: Omit<CreateAutomationInput, "conversationId"> & { conversationId?: string | null },
  /** An update's: the schedule stored before, kept when the patch gives none (a given one is checked like a new one). */
  storedSchedule?: NormalizedSchedule,
): { name: string; schedule: NormalizedSchedule; message: string; conversationId: string | null; enabled: boolean } {
  const fail = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_AUTOMATION_INPUT", problem, { fix });
  };
  if (typeof input !== "object" || input === null) fail("automation input must be an object", "Pass { name, schedule, message, conversationId?, enabled? }.");
  if (!storedSchedule) refuseUnknownFields(input, CREATE_FIELDS, `automation ${JSON.stringify(input.name)}`);
  if (typeof input.name !== "string" || !NAME.test(input.name)) fail(`name ${JSON.stringify(input.name)} is not a valid automation name`, "Use 1-64 lowercase letters, digits, _ or -.");
  if (typeof input.message !== "string" || input.message.trim() === "") fail(`automation "${input.name}": message must be a non-empty string`, "Say what each run should do.");
  if (input.conversationId !== undefined && input.conversationId !== null && (typeof input.conversationId !== "string" || input.conversationId === "")) {
    fail(`automation "${input.name}": conversationId must be a non-empty string`, "Omit it for standalone runs.");
  }
  if (input.enabled !== undefined && typeof input.enabled !== "boolean") fail(`automation "${input.name}": enabled must be a boolean`, "Pass true or false.");
  const schedule = storedSchedule && input.schedule === undefined ? storedSchedule : normalizeSchedule(input.schedule, `automation "${input.name}"`);
  return { name: input.name, schedule, message: input.message, conversationId: input.conversationId ?? null, enabled: input.enabled ?? true };
}

const CREATE_FIELDS = ["name", "schedule", "message", "conversationId", "enabled"];
const UPDATE_FIELDS: UpdateField[] = ["schedule", "message", "conversationId", "enabled"];

/** What a rewrite of a row writes (the automation's payload and next due time), or the answer without a write. */
type RowChange = { payload: AutomationPayload; nextRunAt: Date } | { answer: ListedAutomation };

/** A field nothing reads (a misspelling, `timezone` beside schedule, a rename) is refused, never dropped. */
function refuseUnknownFields(input: object, known: string[], where: string): void {
  if (typeof input !== "object" || input === null) {
    throw new AssemblyLineError("AL_ERR_AUTOMATION_INPUT", `${where}: the change must be an object`, { fix: `Pass an object with some of ${known.join(", ")}.` });
  }
  const unknown = Object.keys(input).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    throw new AssemblyLineError("AL_ERR_AUTOMATION_INPUT", `${where}: unknown field${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`, {
      fix: `Use only ${known.join(", ")}${unknown.includes("timezone") ? '; a time zone goes inside the schedule: { cron: "0 9 * * *", timezone: "Europe/Paris" }' : ""}${unknown.includes("name") && !known.includes("name") ? "; to rename, create the new automation and delete the old one" : ""}.`,
    });
  }
}

function withoutLease({ lease: _lease, ...record }: ScheduleRecord): Omit<ScheduleRecord, "lease"> {
  return record;
}

/** A change of automation `name` given up after REWRITE_TRIES reads, each changed by another writer before `what` (what was being done, and what came of it). */
function conflict(name: string, what: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_AUTOMATION_CONFLICT", `automation "${name}" changed ${REWRITE_TRIES} times between reading it and ${what}`, {
    fix: "Other hosts or runs are changing this automation at the same moment: try the change again once they are done.",
  });
}

function nameTaken(name: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_AUTOMATION_INPUT", `an automation named "${name}" already exists`, {
    fix: "Pick another name, or update the existing automation.",
  });
}
