import { adapter, defineGateway, type RuntimeLogger, type ScheduleStateStore } from "@assemblyline-agents/core";
import { LocalScheduler, plugin } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, createKernel, materializeGateway } from "@assemblyline-agents/runtime";
import { describe, expect, it } from "vitest";

/** A logger that keeps what it is given; `seen(text)` is true once a message containing `text` came, false if none did within 2 s. */
function recording() {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const waiters: Array<{ text: string; resolve: (seen: boolean) => void }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg = "") => {
    lines.push({ level, msg, fields });
    for (const waiter of waiters.filter((entry) => msg.includes(entry.text))) waiter.resolve(true);
  };
  const logger: RuntimeLogger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  const seen = (text: string) =>
    new Promise<boolean>((resolve) => {
      if (lines.some((line) => line.msg.includes(text))) return resolve(true);
      waiters.push({ text, resolve });
      setTimeout(() => resolve(false), 2_000);
    });
  return { logger, lines, seen };
}

async function dueRow(state: InMemoryStateAdapter, id = "job"): Promise<void> {
  await state.upsertSchedule({ id, agentId: "agent", intervalMs: 60_000, nextRunAt: new Date(0).toISOString(), payload: { message: "x" }, enabled: true });
}

const failing = async () => {
  throw new Error("state store unavailable");
};

describe("the local scheduler's start options", () => {
  it("logs a dispatch that threw to the logger the host passes to start()", async () => {
    const state = new InMemoryStateAdapter();
    await dueRow(state);
    const { logger, lines, seen } = recording();
    const scheduler = new LocalScheduler({ store: state, pollIntervalMs: 10 });
    await scheduler.start(failing, { agentId: "agent", logger });
    expect(await seen("schedule dispatch failed")).toBe(true);
    await scheduler.stop();
    expect(lines.find((line) => line.msg.includes("schedule dispatch failed"))).toMatchObject({ level: "warn", fields: { scheduleId: "job", err: expect.objectContaining({ message: "state store unavailable" }) } });
  });

  it("logs a claim that failed to it too", async () => {
    const state = new InMemoryStateAdapter();
    const broken: ScheduleStateStore = Object.assign(Object.create(state) as ScheduleStateStore, {
      claimDueSchedules: async () => {
        throw new Error("connection refused");
      },
    });
    const { logger, seen } = recording();
    const scheduler = new LocalScheduler({ store: broken, pollIntervalMs: 10 });
    await scheduler.start(async () => undefined, { logger });
    expect(await seen("claiming due schedules failed")).toBe(true);
    await scheduler.stop();
  });

  it("keeps a logger it was made with over the start's", async () => {
    const state = new InMemoryStateAdapter();
    await dueRow(state);
    const own = recording();
    const host = recording();
    const scheduler = new LocalScheduler({ store: state, pollIntervalMs: 10, logger: own.logger });
    await scheduler.start(failing, { logger: host.logger });
    expect(await own.seen("schedule dispatch failed")).toBe(true);
    await scheduler.stop();
    expect(host.lines).toEqual([]);
  });

  it("made by the local plugin's scheduler slot (gateway.ts), logs to the start's logger", async () => {
    const state = new InMemoryStateAdapter();
    await dueRow(state);
    const kernel = await createKernel({ plugins: [plugin] });
    const live = await materializeGateway(kernel, defineGateway({ scheduler: adapter("local", { pollIntervalMs: 10 }) }), { env: {}, devMode: true, state } as never);
    const scheduler = live.scheduler as LocalScheduler;
    const { logger, seen } = recording();
    await scheduler.start(failing, { agentId: "agent", logger });
    expect(await seen("schedule dispatch failed")).toBe(true);
    await scheduler.stop();
  });

  it("refuses a lease not below the host's automationCatchUpMs, naming both and how to fix it", async () => {
    const state = new InMemoryStateAdapter();
    for (const [leaseMs, automationCatchUpMs] of [
      [300_000, 180_000],
      [180_000, 180_000],
      [60_000, 30_000],
    ] as const) {
      const scheduler = new LocalScheduler({ store: state, leaseMs });
      const refusal = await scheduler.start(async () => undefined, { automationCatchUpMs }).then(
        () => undefined,
        (error: unknown) => error as { code: string; message: string; fix: string },
      );
      await scheduler.stop();
      expect(refusal, `${leaseMs} vs ${automationCatchUpMs}`).toMatchObject({
        code: "AL_ERR_SCHEDULER_CONFIG",
        message: expect.stringMatching(new RegExp(`leaseMs is ${leaseMs}, not below the runtime's automationCatchUpMs \\(${automationCatchUpMs}\\)`)),
        fix: expect.stringMatching(/leaseMs.*below.*automationCatchUpMs/),
      });
    }
  });

  it("starts with a lease below it, and with none given (the defaults: 60 s under 180 s)", async () => {
    const state = new InMemoryStateAdapter();
    for (const options of [{ automationCatchUpMs: 180_000 }, { automationCatchUpMs: 60_001 }, {}]) {
      const scheduler = new LocalScheduler({ store: state, leaseMs: 60_000 });
      await scheduler.start(async () => undefined, options);
      await scheduler.stop();
    }
    const defaults = new LocalScheduler({ store: state });
    await defaults.start(async () => undefined, { automationCatchUpMs: 180_000 });
    await defaults.stop();
  });
});
