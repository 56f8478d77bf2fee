import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Scheduler } from "../infrastructure.js";
import type { ScheduleStateStore } from "../state/facets.js";
import { useSubject, type StateKitFactory } from "./state/subject.js";

/** A scheduler and the schedule store it reads (what the gateway's state gives it in a host). */
export interface SchedulerKitSubject {
  scheduler: Scheduler;
  schedules: ScheduleStateStore;
}

const HOUR = 3_600_000;

/**
 * The Scheduler contract: once started it dispatches each due, enabled
 * schedule from its store and moves it to its next time; it leaves schedules
 * that are disabled or not yet due alone, and, started with an agentId, those
 * of another agent; stop() waits for the dispatches
 * already running. Dispatches are awaited through promises, never timers: the
 * test timeout bounds a scheduler that never dispatches.
 */
export function describeSchedulerConformance(name: string, factory: StateKitFactory<SchedulerKitSubject>): void {
  describe(`${name}: Scheduler conformance`, () => {
    const subject = useSubject(factory);
    const schedule = (id: string, nextRunAt: Date, enabled = true) =>
      subject().schedules.upsertSchedule({ id, intervalMs: HOUR, nextRunAt: nextRunAt.toISOString(), payload: { kit: true }, enabled });

    it("dispatches a due schedule once started, and moves it to its next time", async () => {
      const id = `kit-due-${randomUUID()}`;
      await schedule(id, new Date(Date.now() - 60_000));
      let dispatched!: (id: string) => void;
      const first = new Promise<string>((resolve) => (dispatched = resolve));
      const seen: string[] = [];
      await subject().scheduler.start(async (scheduleId) => {
        seen.push(scheduleId);
        dispatched(scheduleId);
      });
      try {
        expect(await first).toBe(id);
      } finally {
        await subject().scheduler.stop();
      }
      expect(seen.filter((scheduleId) => scheduleId === id)).toEqual([id]);
      const after = await subject().schedules.getSchedule(id);
      expect(Date.parse(after!.nextRunAt)).toBeGreaterThan(Date.now());
    });

    it("leaves disabled schedules and schedules not yet due alone", async () => {
      const due = `kit-due-${randomUUID()}`;
      const disabled = `kit-disabled-${randomUUID()}`;
      const later = `kit-later-${randomUUID()}`;
      await schedule(disabled, new Date(Date.now() - 60_000), false);
      await schedule(later, new Date(Date.now() + HOUR));
      await schedule(due, new Date(Date.now() - 60_000));
      const seen: string[] = [];
      let dispatched!: () => void;
      const dueSeen = new Promise<void>((resolve) => (dispatched = resolve));
      await subject().scheduler.start(async (scheduleId) => {
        seen.push(scheduleId);
        if (scheduleId === due) dispatched();
      });
      try {
        await dueSeen;
      } finally {
        await subject().scheduler.stop();
      }
      expect(seen).not.toContain(disabled);
      expect(seen).not.toContain(later);
    });

    it("started with an agentId, dispatches that agent's schedules and none of another agent's", async () => {
      const own = `kit-own-${randomUUID()}`;
      const other = `kit-other-${randomUUID()}`;
      const row = (id: string, agentId: string, dueMs: number) =>
        subject().schedules.upsertSchedule({ id, agentId, intervalMs: HOUR, nextRunAt: new Date(Date.now() - dueMs).toISOString(), payload: { kit: true }, enabled: true });
      // The other agent's row is due first: a scheduler that ignores the agent would dispatch it no later than its own.
      await row(other, "kit-agent-b", 120_000);
      await row(own, "kit-agent-a", 60_000);
      const seen: string[] = [];
      let dispatched!: () => void;
      const ownSeen = new Promise<void>((resolve) => (dispatched = resolve));
      await subject().scheduler.start(
        async (scheduleId) => {
          seen.push(scheduleId);
          if (scheduleId === own) dispatched();
        },
        { agentId: "kit-agent-a" },
      );
      try {
        await ownSeen;
      } finally {
        await subject().scheduler.stop();
      }
      expect(seen).not.toContain(other);
      expect(Date.parse((await subject().schedules.getSchedule(other))!.nextRunAt)).toBeLessThan(Date.now());
    });

    it("waits in stop() for a dispatch that is still running", async () => {
      await schedule(`kit-slow-${randomUUID()}`, new Date(Date.now() - 60_000));
      let entered!: () => void;
      const running = new Promise<void>((resolve) => (entered = resolve));
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let finished = false;
      await subject().scheduler.start(async () => {
        entered();
        await gate;
        finished = true;
      });
      await running;
      let stopped = false;
      const stopping = subject().scheduler.stop().then(() => (stopped = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(stopped).toBe(false);
      release();
      await stopping;
      expect(finished).toBe(true);
    });
  });
}
