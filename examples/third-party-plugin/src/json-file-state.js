// @ts-check
import { mkdir, open, readFile, rename } from "node:fs/promises";
import { dirname } from "node:path";
import {
  AssemblyLineError,
  TERMINAL_RUN_STATUSES,
  asStoredJson,
  checkConversationAppend,
  checkLeaseOwner,
  checkListLimit,
  checkNewEvents,
  checkNewRun,
  checkObservedSeq,
  checkRunListFilter,
  checkSeqNumber,
  checkedUsageRecord,
  fenceHolds,
  isClaimableBy,
  isInConversationScope,
  isInUsageScope,
  isLeaseFree,
  isUsageSince,
  leaseExpiresAt,
  staleFenceError,
} from "@assemblyline-agents/core";

/**
 * @typedef {import("@assemblyline-agents/core").TakenRunLease} TakenRunLease
 * @typedef {import("@assemblyline-agents/core").ClaimedRunRecord} ClaimedRunRecord
 * @typedef {import("@assemblyline-agents/core").RunRecord} RunRecord
 * @typedef {import("@assemblyline-agents/core").RunEvent} RunEvent
 * @typedef {import("@assemblyline-agents/core").NewRun} NewRun
 * @typedef {import("@assemblyline-agents/core").CreateRunOptions} CreateRunOptions
 * @typedef {import("@assemblyline-agents/core").ReleaseOptions} ReleaseOptions
 * @typedef {import("@assemblyline-agents/core").NewRunEvent} NewRunEvent
 * @typedef {import("@assemblyline-agents/core").RunStateChange} RunStateChange
 * @typedef {import("@assemblyline-agents/core").RunListFilter} RunListFilter
 * @typedef {import("@assemblyline-agents/core").ClaimOptions} ClaimOptions
 * @typedef {import("@assemblyline-agents/core").ToolCallRecord} ToolCallRecord
 * @typedef {import("@assemblyline-agents/core").StepRecord} StepRecord
 * @typedef {import("@assemblyline-agents/core").CheckpointRecord} CheckpointRecord
 * @typedef {import("@assemblyline-agents/core").DeliveryRecord} DeliveryRecord
 * @typedef {import("@assemblyline-agents/core").ConversationMessage} ConversationMessage
 * @typedef {import("@assemblyline-agents/core").UsageRecord} UsageRecord
 * @typedef {import("@assemblyline-agents/core").UsageFilter} UsageFilter
 * @typedef {import("@assemblyline-agents/core").RunFence} RunFence
 * @typedef {import("@assemblyline-agents/core").RunLease} RunLease
 *
 * @typedef {{ record: RunRecord, ordinal: number, events: RunEvent[], toolCalls: Record<string, ToolCallRecord>,
 *   steps: Record<string, StepRecord>, checkpoint: CheckpointRecord | null, deliveryIds: string[],
 *   fence?: number }} StoredRun (fence: the highest lease token issued; kept across releases)
 * @typedef {{ format: 1, nextOrdinal: number, runs: Record<string, StoredRun>, idempotency: Record<string, string>,
 *   deliveries: Record<string, { record: DeliveryRecord, ordinal: number }>, conversations: Record<string, ConversationMessage[]>,
 *   usage?: UsageRecord[] }} Document (usage: in the order recorded; files written before it have none)
 */

const FORMAT = 1;
const DEFAULT_PAGE_SIZE = 50;
const DEFAULT_CLAIM_LIMIT = 100;

/** @type {<T>(value: T) => T} Every returned value is a private copy. */
const copy = (value) => structuredClone(value);
/**
 * @type {<T>(value: T) => T} Every stored value is its JSON form, as the file holds it: read back before and
 * after a restart alike (a Date as its ISO text, an undefined field left out); a BigInt is refused.
 */
const asJson = (value) => asStoredJson(value);
/** @param {{ expiresAt: string } | null} lease @param {Date} now */

/** @returns {Document} */
const emptyDocument = () => ({ format: FORMAT, nextOrdinal: 1, runs: {}, idempotency: {}, deliveries: {}, conversations: {} });

/**
 * Runs, conversations and usage in one JSON file. Every call reads and changes the
 * in-memory document without awaiting in between, so calls are atomic with
 * respect to each other; a call that changes something resolves once a file
 * write that includes its change has been fsynced and renamed into place.
 * One process per file: it takes no lock. What a call writes first passes core's input checks
 * (checkNewRun, checkedUsageRecord, checkLeaseOwner...), so it refuses what every store refuses,
 * with the same message, as the state kit asks.
 */
export class JsonFileState {
  /** @param {{ file: string }} options */
  constructor(options) {
    /** @readonly */
    this.file = options.file;
    /** @type {Document} */
    this.doc = emptyDocument();
    /** @type {Promise<void> | undefined} */
    this.opening = undefined;
    /** The write that will include changes made from now on, while one is waiting to start. */
    /** @type {Promise<void> | undefined} */
    this.nextWrite = undefined;
    /** @type {Promise<void>} */
    this.writing = Promise.resolve();
  }

  /** Construct and load, so an unreadable file fails at boot; subclasses open as themselves. @param {{ file: string }} options */
  static async open(options) {
    const state = new this(options);
    await state.ready();
    return state;
  }

  /** @returns {Promise<void>} */
  ready() {
    this.opening ??= readFile(this.file, "utf8").then(
      (text) => {
        const parsed = JSON.parse(text);
        if (parsed?.format !== FORMAT) {
          throw new AssemblyLineError("AL_ERR_STATE_ROW_INVALID", `${this.file} is not a jsonfile state file of format ${FORMAT}`, {
            fix: "Point jsonFileState({ file }) at a file this plugin wrote, or move the old one away.",
          });
        }
        this.doc = parsed;
      },
      (error) => {
        if (error.code !== "ENOENT") throw error;
      },
    );
    return this.opening;
  }

  /** Wait for pending writes. */
  async close() {
    await this.writing;
  }

  /** Persist the document; resolves when a write that started after this call has finished. */
  persist() {
    if (!this.nextWrite) {
      const write = this.writing.then(async () => {
        this.nextWrite = undefined;
        const text = JSON.stringify(this.doc);
        const temp = `${this.file}.tmp-${process.pid}`;
        await mkdir(dirname(this.file), { recursive: true });
        const handle = await open(temp, "w");
        try {
          await handle.writeFile(text);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(temp, this.file);
      });
      this.nextWrite = write;
      this.writing = write.catch(() => undefined);
    }
    return this.nextWrite;
  }

  // ---- runs ----------------------------------------------------------------

  /** @param {NewRun} run @param {CreateRunOptions} [options] */
  async createRun(run, options = {}) {
    await this.ready();
    checkNewRun("createRun", run, options);
    const existingId = run.idempotencyKey !== undefined ? this.doc.idempotency[run.idempotencyKey] : undefined;
    const existing = this.doc.runs[existingId ?? run.id];
    if (existing) return { run: copy(existing.record), created: false };
    const nowMs = Date.now();
    const now = new Date(nowMs).toISOString();
    const leaseExpiry = options.lease ? leaseExpiresAt("createRun", "options.lease.ttlMs", nowMs, options.lease.ttlMs) : "";
    /** @type {RunRecord} */
    const record = {
      id: run.id,
      agentId: run.agentId,
      agentRevision: run.agentRevision,
      conversationId: run.conversationId ?? null,
      status: run.status ?? "queued",
      modelSpec: run.modelSpec,
      input: asJson(run.input),
      output: null,
      error: null,
      lastSeq: 1,
      observedSeq: 0,
      // Leased to its creator in the same write when asked: the first lease has token 1.
      lease: options.lease ? { owner: options.lease.owner, expiresAt: leaseExpiry, token: 1 } : null,
      createdAt: now,
      updatedAt: now,
    };
    const data = { agentId: record.agentId, agentRevision: record.agentRevision, conversationId: record.conversationId, modelSpec: record.modelSpec, status: record.status, input: copy(/** @type {any} */ (record.input)) };
    const created = { id: `${run.id}:1`, runId: run.id, seq: 1, type: "run.created", data, createdAt: now };
    this.doc.runs[run.id] = { record, ordinal: this.doc.nextOrdinal++, events: [created], toolCalls: {}, steps: {}, checkpoint: null, deliveryIds: [], ...(record.lease ? { fence: 1 } : {}) };
    if (run.idempotencyKey !== undefined) this.doc.idempotency[run.idempotencyKey] = run.id;
    await this.persist();
    return { run: copy(record), created: true, createdEvent: copy(created) };
  }

  /** @param {string} runId */
  async getRun(runId) {
    await this.ready();
    const stored = this.doc.runs[runId];
    return stored ? copy(stored.record) : undefined;
  }

  /** Newest first; the cursor is the ordinal of the last run on the page. @param {RunListFilter} [filter] */
  async listRuns(filter = {}) {
    await this.ready();
    const statuses = filter.status === undefined ? undefined : [filter.status].flat();
    const before = filter.cursor === undefined ? Infinity : Number(filter.cursor);
    if (Number.isNaN(before)) {
      throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `listRuns got cursor "${filter.cursor}", which this state store did not produce`, {
        fix: "Pass the nextCursor of a previous page, or no cursor for the first page.",
      });
    }
    // A status no run has and a limit that is no number are refused; a fractional limit is the whole runs below it.
    const limit = checkRunListFilter(filter) ?? DEFAULT_PAGE_SIZE;
    const matching = Object.values(this.doc.runs)
      .filter(({ record, ordinal }) =>
        ordinal < before &&
        (statuses === undefined || statuses.includes(record.status)) &&
        (filter.agentId === undefined || record.agentId === filter.agentId) &&
        (filter.conversationId === undefined || record.conversationId === filter.conversationId) &&
        (filter.observersBehind !== true || record.observedSeq < record.lastSeq))
      .sort((a, b) => b.ordinal - a.ordinal);
    const page = matching.slice(0, limit);
    const last = page.at(-1);
    return { runs: page.map((stored) => copy(stored.record)), nextCursor: matching.length > limit && last ? String(last.ordinal) : null };
  }

  /**
   * @param {string} runId @param {NewRunEvent[]} events @param {RunStateChange} [change]
   * @param {{ expectedLastSeq?: number, fence?: RunFence }} [options]
   */
  async appendEvents(runId, events, change, options = {}) {
    await this.ready();
    if (options.expectedLastSeq !== undefined) checkSeqNumber(`appendEvents(run "${runId}")`, "options.expectedLastSeq", options.expectedLastSeq);
    const stored = this.requireRun(runId);
    // Checked with no await before the change below: a stale lease holder never writes.
    if (options.fence && !fenceHolds(stored.record.lease, options.fence)) throw staleFenceError(runId, options.fence, stored.record.lease);
    if (options.expectedLastSeq !== undefined && options.expectedLastSeq !== stored.record.lastSeq) {
      throw new AssemblyLineError("AL_ERR_EVENT_SEQ", `run ${runId} is at seq ${stored.record.lastSeq}, not the expected ${options.expectedLastSeq}`, {
        fix: "Reload the run and decide again; another writer moved it on.",
      });
    }
    // A position past the log (after this append) would leave the later events unobserved for good.
    checkNewEvents(`appendEvents(run "${runId}")`, events);
    checkObservedSeq(`appendEvents(run "${runId}")`, "options.observedSeq", options.observedSeq, stored.record.lastSeq + events.length);
    const now = new Date().toISOString();
    // Everything in its stored form first: a value that is not JSON throws before anything changes.
    const appended = events.map((event, index) => {
      const seq = stored.record.lastSeq + index + 1;
      return { id: `${runId}:${seq}`, runId, seq, type: event.type, data: asJson(event.data ?? {}), createdAt: now };
    });
    const ready = change === undefined ? undefined : asJson(change);
    stored.events.push(...appended);
    stored.record.lastSeq += appended.length;
    stored.record.updatedAt = now;
    if (ready) this.applyChange(stored, ready, now);
    // Observers' position rides on the append (one write instead of two); forward only.
    if (options.observedSeq !== undefined && options.observedSeq > stored.record.observedSeq) stored.record.observedSeq = options.observedSeq;
    await this.persist();
    return copy(appended);
  }

  /** @param {string} runId @param {{ afterSeq?: number, limit?: number }} [options] */
  async listEvents(runId, options = {}) {
    await this.ready();
    const operation = `listEvents(run "${runId}")`;
    if (options.limit !== undefined) checkListLimit(options.limit, operation);
    if (options.afterSeq !== undefined) checkSeqNumber(operation, "options.afterSeq", options.afterSeq);
    const after = (this.doc.runs[runId]?.events ?? []).filter((event) => event.seq > (options.afterSeq ?? 0));
    return copy(options.limit === undefined ? after : after.slice(0, options.limit));
  }

  /** @param {string} runId @param {number} seq */
  async markObserved(runId, seq) {
    await this.ready();
    const stored = this.requireRun(runId);
    checkObservedSeq(`markObserved(run "${runId}")`, "seq", seq, stored.record.lastSeq);
    if (seq <= stored.record.observedSeq) return;
    stored.record.observedSeq = seq;
    await this.persist();
  }

  /** @param {string} runId @param {string} callId */
  async getToolCall(runId, callId) {
    await this.ready();
    const call = this.doc.runs[runId]?.toolCalls[callId];
    return call ? copy(call) : undefined;
  }

  /** @param {string} runId */
  async listToolCalls(runId) {
    await this.ready();
    return copy(Object.values(this.doc.runs[runId]?.toolCalls ?? {}));
  }

  /** @param {string} runId @param {string} key */
  async getStep(runId, key) {
    await this.ready();
    const step = this.doc.runs[runId]?.steps[key];
    return step ? copy(step) : undefined;
  }

  /** @param {string} runId */
  async getCheckpoint(runId) {
    await this.ready();
    const checkpoint = this.doc.runs[runId]?.checkpoint;
    return checkpoint ? copy(checkpoint) : undefined;
  }

  /**
   * A new lease with a higher fencing token, naming the lease it replaced (`replaced`); null while another
   * owner's lease is live or the run is finished.
   * @param {string} runId @param {string} owner @param {number} ttlMs @param {Date} [now] @returns {Promise<TakenRunLease | null>}
   */
  async acquireRunLease(runId, owner, ttlMs, now = new Date()) {
    await this.ready();
    const stored = this.requireRun(runId);
    const lease = stored.record.lease;
    checkLeaseOwner(`acquireRunLease(run "${runId}")`, "owner", owner);
    const expiresAt = leaseExpiresAt(`acquireRunLease(run "${runId}")`, "ttlMs", now.getTime(), ttlMs);
    if (TERMINAL_RUN_STATUSES.includes(stored.record.status)) return null;
    if (lease && lease.owner !== owner && !isLeaseFree(lease, now)) return null;
    stored.fence = (stored.fence ?? lease?.token ?? 0) + 1;
    stored.record.lease = { owner, expiresAt, token: stored.fence };
    await this.persist();
    const taken = copy(stored.record.lease);
    return lease ? { ...taken, replaced: { owner: lease.owner, expiresAt: lease.expiresAt } } : taken;
  }

  /**
   * Extend only the lease the fence names; never re-take a released or taken-over one.
   * @param {string} runId @param {RunFence} fence @param {number} ttlMs @param {Date} [now] @returns {Promise<RunLease | null>}
   */
  async renewRunLease(runId, fence, ttlMs, now = new Date()) {
    await this.ready();
    const stored = this.requireRun(runId);
    const expiresAt = leaseExpiresAt(`renewRunLease(run "${runId}")`, "ttlMs", now.getTime(), ttlMs);
    if (TERMINAL_RUN_STATUSES.includes(stored.record.status) || !fenceHolds(stored.record.lease, fence)) return null;
    stored.record.lease = { owner: fence.owner, expiresAt, token: fence.token };
    await this.persist();
    return copy(stored.record.lease);
  }

  /** @param {string} runId @param {string} owner @param {number} [token] @param {ReleaseOptions} [options] */
  async releaseRunLease(runId, owner, token, options = {}) {
    await this.ready();
    const stored = this.doc.runs[runId];
    if (!stored) return;
    checkObservedSeq(`releaseRunLease(run "${runId}")`, "options.observedSeq", options.observedSeq, stored.record.lastSeq);
    const lease = stored.record.lease;
    const holds = lease?.owner === owner && (token === undefined || lease.token === token);
    const observed = options.observedSeq !== undefined && options.observedSeq > stored.record.observedSeq;
    if (!holds && !observed) return;
    if (holds) stored.record.lease = null;
    if (observed) stored.record.observedSeq = /** @type {number} */ (options.observedSeq);
    await this.persist();
  }

  /** @param {ClaimOptions} options @returns {Promise<ClaimedRunRecord[]>} */
  async claimRecoverableRuns(options) {
    await this.ready();
    const now = options.now ?? new Date();
    checkLeaseOwner("claimRecoverableRuns", "options.owner", options.owner);
    const expiresAt = leaseExpiresAt("claimRecoverableRuns", "options.ttlMs", now.getTime(), options.ttlMs);
    const { agentId } = options;
    const claimed = Object.values(this.doc.runs)
      .filter(({ record }) => (record.status === "queued" || record.status === "running") && isLeaseFree(record.lease, now))
      // Only the agent's own runs and its subagents' when it asks: another agent's run is not its to drive.
      .filter(({ record }) => isClaimableBy(record, agentId))
      .sort((a, b) => a.ordinal - b.ordinal)
      .slice(0, Math.max(0, options.limit ?? DEFAULT_CLAIM_LIMIT));
    // The lease each claim replaces, reported with the run (ClaimedRunRecord.replacedLease), never stored.
    const replaced = claimed.map(({ record }) => record.lease);
    for (const stored of claimed) {
      stored.fence = (stored.fence ?? stored.record.lease?.token ?? 0) + 1;
      stored.record.lease = { owner: options.owner, expiresAt, token: stored.fence };
    }
    if (claimed.length > 0) await this.persist();
    return claimed.map(({ record }, index) => {
      const lease = replaced[index];
      return lease ? { ...copy(record), replacedLease: { owner: lease.owner, expiresAt: lease.expiresAt } } : copy(record);
    });
  }

  /** @param {string} runId */
  async listDeliveries(runId) {
    await this.ready();
    return (this.doc.runs[runId]?.deliveryIds ?? []).map((id) => copy(this.doc.deliveries[id].record));
  }

  /** @param {ClaimOptions} options */
  async claimDeliveries(options) {
    await this.ready();
    const now = options.now ?? new Date();
    checkLeaseOwner("claimDeliveries", "options.owner", options.owner);
    const expiresAt = leaseExpiresAt("claimDeliveries", "options.ttlMs", now.getTime(), options.ttlMs);
    const { agentId } = options;
    const claimed = Object.values(this.doc.deliveries)
      .filter(({ record }) => record.status === "pending" && Date.parse(record.availableAt) <= now.getTime() && isLeaseFree(record.lease, now))
      // Only replies of the agent's own runs when it asks: another agent's host would send them through its own channel.
      .filter(({ record }) => isClaimableBy(this.doc.runs[record.runId]?.record, agentId))
      .sort((a, b) => a.ordinal - b.ordinal)
      .slice(0, Math.max(0, options.limit ?? DEFAULT_CLAIM_LIMIT));
    for (const { record } of claimed) {
      // An attempt counts from its claim: a sender that dies mid-send used one up.
      record.attempts += 1;
      record.lease = { owner: options.owner, expiresAt };
      record.updatedAt = now.toISOString();
    }
    if (claimed.length > 0) await this.persist();
    return claimed.map(({ record }) => copy(record));
  }

  /** A worker whose lease was taken over is ignored, so it cannot undo the new holder's work. @param {string} deliveryId @param {string} owner */
  async completeDelivery(deliveryId, owner) {
    await this.ready();
    const record = this.doc.deliveries[deliveryId]?.record;
    if (record?.lease?.owner !== owner) return;
    Object.assign(record, { status: "delivered", lease: null, updatedAt: new Date().toISOString() });
    await this.persist();
  }

  /**
   * `countAttempt: false` gives back the attempt the claim counted (a hand-back that sent nothing), only
   * for the lease's holder, as the rest of the call.
   * @param {string} deliveryId @param {string} owner @param {string} error @param {Date} [retryAt]
   * @param {import("@assemblyline-agents/core").FailDeliveryOptions} [options]
   */
  async failDelivery(deliveryId, owner, error, retryAt, options = {}) {
    await this.ready();
    const record = this.doc.deliveries[deliveryId]?.record;
    if (record?.lease?.owner !== owner) return;
    if (options.countAttempt === false) record.attempts = Math.max(0, record.attempts - 1);
    Object.assign(record, {
      status: retryAt ? "pending" : "failed",
      lastError: error,
      lease: null,
      updatedAt: new Date().toISOString(),
      ...(retryAt ? { availableAt: retryAt.toISOString() } : {}),
    });
    await this.persist();
  }

  // ---- conversations ---------------------------------------------------------

  /**
   * Each message is kept with the agent it belongs to (null without one).
   * @param {string} conversationId @param {ConversationMessage[]} messages @param {{ agentId?: string }} [options]
   */
  async appendConversationMessages(conversationId, messages, options = {}) {
    await this.ready();
    checkConversationAppend(`appendConversationMessages(conversation "${conversationId}")`, conversationId, messages, options);
    const agentId = options.agentId ?? null;
    (this.doc.conversations[conversationId] ??= []).push(...asJson(messages).map((message) => ({ ...message, agentId })));
    await this.persist();
  }

  /**
   * Oldest first; with `limit`, only the last `limit`; with `agentId`, only that agent's and those
   * without an agent (files written before it), filtered before the limit.
   * @param {string} conversationId @param {{ limit?: number, agentId?: string }} [options]
   */
  async listConversationMessages(conversationId, options = {}) {
    await this.ready();
    const { agentId, limit } = options;
    if (limit !== undefined) checkListLimit(limit, `listConversationMessages(conversation "${conversationId}")`);
    const stored = this.doc.conversations[conversationId] ?? [];
    const all = agentId === undefined ? stored : stored.filter((message) => isInConversationScope(message, agentId));
    const tail = limit === undefined ? all : limit === 0 ? [] : all.slice(-limit);
    return copy(tail).map((message) => ({ ...message, agentId: message.agentId ?? null }));
  }

  // ---- usage -----------------------------------------------------------------

  /** Recording the same id twice counts once; the record keeps its agent (null without one). @param {UsageRecord} record */
  async recordUsage(record) {
    await this.ready();
    // createdAt kept as an ISO UTC time, which listUsage's `since` compares.
    const checked = checkedUsageRecord("recordUsage", record);
    const usage = (this.doc.usage ??= []);
    if (usage.some((held) => held.id === checked.id)) return;
    usage.push({ ...asJson(checked), agentId: checked.agentId ?? null });
    await this.persist();
  }

  /**
   * In the order recorded; every given field must match, and with `agentId` only that agent's and its
   * subagents' records and those without an agent.
   * @param {UsageFilter} filter
   */
  async listUsage(filter) {
    await this.ready();
    const { runId, conversationId, agentId, since } = filter;
    const listed = (this.doc.usage ?? []).filter(
      (record) =>
        (runId === undefined || record.runId === runId) &&
        (conversationId === undefined || record.conversationId === conversationId) &&
        isInUsageScope(record, agentId) &&
        isUsageSince(record, since),
    );
    return copy(listed);
  }

  // ---- internals -------------------------------------------------------------

  /** @param {string} runId */
  requireRun(runId) {
    const stored = this.doc.runs[runId];
    if (!stored) {
      throw new AssemblyLineError("AL_ERR_RUN_NOT_FOUND", `no run ${runId} in ${this.file}`, { fix: "Create the run first, or check the run id." });
    }
    return stored;
  }

  /** @param {StoredRun} stored @param {RunStateChange} change (in its stored form) @param {string} now */
  applyChange(stored, change, now) {
    if (change.run) Object.assign(stored.record, change.run);
    if (change.toolCall) stored.toolCalls[change.toolCall.callId] = change.toolCall;
    // Step keys are insert-once: a replayed step keeps its first result.
    if (change.step && !(change.step.key in stored.steps)) stored.steps[change.step.key] = change.step;
    if (change.checkpoint !== undefined) stored.checkpoint = change.checkpoint;
    const delivery = change.delivery;
    if (delivery && !(delivery.id in this.doc.deliveries)) {
      this.doc.deliveries[delivery.id] = {
        ordinal: this.doc.nextOrdinal++,
        record: {
          id: delivery.id,
          runId: stored.record.id,
          channel: delivery.channel,
          conversationId: delivery.conversationId ?? null,
          payload: delivery.payload,
          status: "pending",
          attempts: 0,
          availableAt: now,
          lastError: null,
          lease: null,
          createdAt: now,
          updatedAt: now,
        },
      };
      stored.deliveryIds.push(delivery.id);
    }
  }
}
