import type { ScheduleClaimOptions, ScheduleRecord } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { LocalScheduler } from "../src/index.js";
import { nextRunAt } from "../src/scheduler/local-scheduler.js";

const HOUR = 60 * 60 * 1000;
const running: LocalScheduler[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((scheduler) => scheduler.stop()));
});

function scheduler(store: InMemoryStateAdapter, options: { leaseMs?: number } = {}): LocalScheduler {
  const created = new LocalScheduler({ store, pollIntervalMs: 10, ...options });
  running.push(created);
  return created;
}

async function until(condition: () => boolean, timeoutMs = 1_500): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("LocalScheduler", () => {
  it("dispatches a due schedule once even with two schedulers racing on one store", async () => {
    const store = new InMemoryStateAdapter();
    const due = new Date(Date.now() - 1_000);
    await store.upsertSchedule({ id: "daily-report", intervalMs: HOUR, nextRunAt: due.toISOString(), payload: {}, enabled: true });
    await store.upsertSchedule({ id: "later", intervalMs: HOUR, nextRunAt: new Date(Date.now() + HOUR).toISOString(), payload: {}, enabled: true });
    const dispatched: string[] = [];
    const dispatch = async (id: string) => {
      dispatched.push(id);
    };
    await Promise.all([scheduler(store).start(dispatch), scheduler(store).start(dispatch)]);
    await until(() => dispatched.length > 0);
    // Both keep polling for a while; neither may dispatch it again.
    await sleep(150);
    expect(dispatched).toEqual(["daily-report"]);
    const after = await store.getSchedule("daily-report");
    expect(after?.lease).toBeNull();
    expect(Date.parse(after!.nextRunAt)).toBe(due.getTime() + HOUR);
  });

  it("keeps an edit that re-timed a schedule while it was being dispatched, rather than the old schedule's next time", async () => {
    const store = new InMemoryStateAdapter();
    const due = new Date(Date.now() - 1_000);
    await store.upsertSchedule({ id: "report", intervalMs: HOUR, nextRunAt: due.toISOString(), payload: {}, enabled: true });
    const edited = new Date(Date.now() + 5 * HOUR).toISOString();
    let dispatched = false;
    await scheduler(store).start(async (id) => {
      // The agent moves the report while its dispatch runs; the dispatch still answers the old schedule's next time.
      await store.upsertSchedule({ id, intervalMs: HOUR, nextRunAt: edited, payload: { moved: true }, enabled: true });
      dispatched = true;
      return { nextRunAt: new Date(due.getTime() + HOUR) };
    });
    await until(() => dispatched);
    let row = await store.getSchedule("report");
    for (let attempt = 0; attempt < 300 && row?.lease !== null; attempt++) {
      await sleep(5);
      row = await store.getSchedule("report");
    }
    expect(row).toMatchObject({ lease: null, nextRunAt: edited, payload: { moved: true } });
  });

  it("keeps an edit that changed a schedule while it was being dispatched but kept its due time, rather than the old schedule's next time", async () => {
    const store = new InMemoryStateAdapter();
    const due = new Date(Date.now() - 1_000);
    await store.upsertSchedule({ id: "report", intervalMs: HOUR, nextRunAt: due.toISOString(), payload: { every: "hour" }, enabled: true });
    const claims: ScheduleRecord[] = [];
    await scheduler(store).start(async (id, claimed) => {
      claims.push(claimed);
      // Given a daily schedule while its first dispatch runs, the row keeps the due time passed; the dispatch still answers the hourly next time.
      if (claims.length === 1) await store.upsertSchedule({ id, intervalMs: 24 * HOUR, nextRunAt: due.toISOString(), payload: { every: "day" }, enabled: true });
      return { nextRunAt: new Date(due.getTime() + (claims.length === 1 ? HOUR : 24 * HOUR)) };
    });
    // Left at its due time, the edited row is dispatched again (its dispatch decides anew); moved to the old next time, it would not be.
    await until(() => claims.length >= 2);
    expect(claims[1]).toMatchObject({ nextRunAt: due.toISOString(), payload: { every: "day" } });
    // That dispatch, of the row unchanged since its claim, moves it on.
    await sleep(50);
    expect(claims).toHaveLength(2);
    expect(Date.parse((await store.getSchedule("report"))!.nextRunAt)).toBe(due.getTime() + 24 * HOUR);
  });

  it("leaves disabled schedules alone", async () => {
    const store = new InMemoryStateAdapter();
    await store.upsertSchedule({ id: "off", intervalMs: 10, nextRunAt: new Date(0).toISOString(), payload: {}, enabled: false });
    const dispatched: string[] = [];
    await scheduler(store).start(async (id) => void dispatched.push(id));
    await sleep(100);
    expect(dispatched).toEqual([]);
  });

  it("stop waits for a dispatch in flight and then polls no more", async () => {
    const store = new InMemoryStateAdapter();
    await store.upsertSchedule({ id: "slow", intervalMs: 10, nextRunAt: new Date(0).toISOString(), payload: {}, enabled: true });
    let release!: () => void;
    let finished = 0;
    let calls = 0;
    const local = scheduler(store);
    await local.start(async () => {
      calls += 1;
      await new Promise<void>((resolve) => (release = resolve));
      finished += 1;
    });
    await until(() => calls === 1);
    let stopped = false;
    const stopping = local.stop().then(() => (stopped = true));
    await sleep(50);
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(finished).toBe(1);
    await sleep(60);
    expect(calls).toBe(1);
  });

  it("retries a failed dispatch once its lease has expired", async () => {
    const store = new InMemoryStateAdapter();
    await store.upsertSchedule({ id: "flaky", intervalMs: HOUR, nextRunAt: new Date(0).toISOString(), payload: {}, enabled: true });
    let calls = 0;
    await scheduler(store, { leaseMs: 50 }).start(async () => {
      calls += 1;
      if (calls === 1) throw new Error("queue unavailable");
    });
    await until(() => calls === 2);
    await sleep(30);
    expect(calls).toBe(2);
    const after = await store.getSchedule("flaky");
    expect(after?.lease).toBeNull();
    expect(Date.parse(after!.nextRunAt)).toBeGreaterThan(Date.now());
  });

  it("started again while its stop() still waits for a poll, keeps one polling loop, and its next stop() leaves no poll running", async () => {
    const store = new InMemoryStateAdapter();
    let claiming = 0;
    let mostAtOnce = 0;
    let claims = 0;
    const claim = store.claimDueSchedules.bind(store);
    store.claimDueSchedules = async (options: ScheduleClaimOptions) => {
      claiming += 1;
      claims += 1;
      mostAtOnce = Math.max(mostAtOnce, claiming);
      try {
        await sleep(30);
        return await claim(options);
      } finally {
        claiming -= 1;
      }
    };
    const local = scheduler(store);
    const dispatch = async () => undefined;
    await local.start(dispatch);
    await until(() => claiming === 1);
    const stopping = local.stop();
    await local.start(dispatch);
    await stopping;
    await sleep(200);
    await local.stop();
    const claimingAtStop = claiming;
    const claimsAtStop = claims;
    await sleep(60);
    expect({ mostAtOnce, claimingAtStop, claimsAfterStop: claims - claimsAtStop }).toEqual({ mostAtOnce: 1, claimingAtStop: 0, claimsAfterStop: 0 });
  });

  it("stopped while a start() waits for an earlier stop(), never starts polling", async () => {
    const store = new InMemoryStateAdapter();
    let claims = 0;
    const claim = store.claimDueSchedules.bind(store);
    store.claimDueSchedules = async (options: ScheduleClaimOptions) => {
      claims += 1;
      await sleep(30);
      return claim(options);
    };
    const local = scheduler(store);
    await local.start(async () => undefined);
    await until(() => claims === 1);
    const firstStop = local.stop();
    const restart = local.start(async () => undefined);
    await local.stop();
    await Promise.all([firstStop, restart]);
    await sleep(60);
    expect(claims).toBe(1);
  });

  it("refuses to start twice without a stop", async () => {
    const local = scheduler(new InMemoryStateAdapter());
    await local.start(async () => undefined);
    await expect(local.start(async () => undefined)).rejects.toThrow(/already started/);
  });

  it("takes its store from a function at start, for a scheduler made before the state exists", async () => {
    let store: InMemoryStateAdapter | undefined;
    const local = new LocalScheduler({ store: () => store, pollIntervalMs: 10 });
    running.push(local);
    await expect(local.start(async () => undefined)).rejects.toThrow(/AL_ERR_GATEWAY_SLOT/);
    store = new InMemoryStateAdapter();
    await store.upsertSchedule({ id: "late", intervalMs: HOUR, nextRunAt: new Date(0).toISOString(), payload: {}, enabled: true });
    const dispatched: string[] = [];
    await local.start(async (id) => void dispatched.push(id));
    await until(() => dispatched.length === 1);
    expect(dispatched).toEqual(["late"]);
  });

  it("started for an agent, dispatches that agent's schedules and those of no agent, never another agent's", async () => {
    const store = new InMemoryStateAdapter();
    const due = new Date(0).toISOString();
    await store.upsertSchedule({ id: "a-report", agentId: "agent-a", intervalMs: HOUR, nextRunAt: due, payload: {}, enabled: true });
    await store.upsertSchedule({ id: "b-report", agentId: "agent-b", intervalMs: HOUR, nextRunAt: due, payload: {}, enabled: true });
    await store.upsertSchedule({ id: "anyone", intervalMs: HOUR, nextRunAt: due, payload: {}, enabled: true });
    const dispatched: string[] = [];
    const warnings: Array<Record<string, unknown>> = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (fields: Record<string, unknown>) => void warnings.push(fields) };
    const ofA = new LocalScheduler({ store, pollIntervalMs: 10, logger });
    running.push(ofA);
    await ofA.start(async (id) => void dispatched.push(id), { agentId: "agent-a" });
    await until(() => dispatched.length === 2);
    await sleep(60);
    expect(dispatched.sort()).toEqual(["a-report", "anyone"]);
    // The store itself left B's row alone: nothing had to be handed back.
    expect(warnings).toEqual([]);
    expect(await store.getSchedule("b-report")).toMatchObject({ lease: null, nextRunAt: due });
  });

  it("leaves another agent's schedule undispatched and leased, from a store that ignores the claim's agent, without holding its own agent's rows out", async () => {
    const store = new InMemoryStateAdapter();
    const due = (ms: number) => new Date(ms).toISOString();
    // More of B's rows due first than A claims in one poll: released, they would come back first in every claim.
    for (let index = 0; index < 3; index += 1) {
      await store.upsertSchedule({ id: `b-report-${index}`, agentId: "agent-b", intervalMs: HOUR, nextRunAt: due(index), payload: {}, enabled: true });
    }
    await store.upsertSchedule({ id: "a-report", agentId: "agent-a", intervalMs: HOUR, nextRunAt: due(10), payload: {}, enabled: true });
    // A store built before the option: it leases every agent's rows.
    const ignoring = Object.assign(Object.create(store) as InMemoryStateAdapter, {
      claimDueSchedules: ({ agentId: _ignored, ...options }: ScheduleClaimOptions) => store.claimDueSchedules(options),
    });
    const warnings: Array<Record<string, unknown>> = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (fields: Record<string, unknown>) => void warnings.push(fields) };
    const ofA = new LocalScheduler({ store: ignoring, pollIntervalMs: 10, batchSize: 2, leaseMs: 200, logger });
    running.push(ofA);
    const dispatchedByA: string[] = [];
    await ofA.start(async (id) => void dispatchedByA.push(id), { agentId: "agent-a" });
    await until(() => dispatchedByA.length === 1);
    expect(dispatchedByA).toEqual(["a-report"]);
    expect(warnings).toEqual([{ event: "state.claim_filter_ignored", scheduleId: "b-report-0", agentId: "agent-b" }]);
    await ofA.stop();
    // B's rows were never moved: its own scheduler takes them once A's leases run out.
    expect((await store.listSchedules()).filter((row) => row.agentId === "agent-b").map((row) => row.nextRunAt)).toEqual([due(0), due(1), due(2)]);
    const dispatchedByB: string[] = [];
    await scheduler(store).start(async (id) => void dispatchedByB.push(id), { agentId: "agent-b" });
    await until(() => dispatchedByB.length === 3);
    expect(dispatchedByB.sort()).toEqual(["b-report-0", "b-report-1", "b-report-2"]);
  });

  it("moves the next run one interval on, skipping slots missed while down", () => {
    const due = "2025-01-01T00:00:00.000Z";
    expect(nextRunAt({ intervalMs: HOUR, nextRunAt: due }, new Date("2025-01-01T00:00:05Z")).toISOString()).toBe("2025-01-01T01:00:00.000Z");
    expect(nextRunAt({ intervalMs: HOUR, nextRunAt: due }, new Date("2025-01-01T05:30:00Z")).toISOString()).toBe("2025-01-01T06:00:00.000Z");
  });

  it("runs a schedule of intervalMs 0 once, then leaves it resting instead of due at every poll", async () => {
    const store = new InMemoryStateAdapter();
    const now = new Date("2026-03-01T08:00:00.000Z");
    await store.upsertSchedule({ id: "welcome", intervalMs: 0, nextRunAt: now.toISOString(), payload: { message: "send the welcome mail" }, enabled: true });
    const dispatched: string[] = [];
    const once = new LocalScheduler({ store, pollIntervalMs: 10, now: () => now });
    await once.start(async (id) => void dispatched.push(id));
    await until(() => dispatched.length > 0);
    // stop() waits for the dispatch in flight to move the schedule on.
    await once.stop();
    expect(dispatched).toEqual(["welcome"]);
    expect((await store.getSchedule("welcome"))?.nextRunAt).toBe("9999-12-31T00:00:00.000Z");
    expect(await store.claimDueSchedules({ owner: "probe", ttlMs: 1_000, now: new Date("2026-03-02T08:00:00.000Z") })).toEqual([]);
  });

  it("refuses a fractional intervalMs, which one store would round to 0 and another run every millisecond", async () => {
    const store = new InMemoryStateAdapter();
    await expect(store.upsertSchedule({ id: "odd", intervalMs: 0.4, nextRunAt: new Date().toISOString(), payload: {}, enabled: true })).rejects.toMatchObject({
      code: "AL_ERR_STATE_INPUT_INVALID",
      message: expect.stringContaining("schedule.intervalMs"),
    });
  });
});
