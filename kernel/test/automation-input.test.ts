import { describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { normalizeSchedule } from "@assemblyline-agents/runtime";
import { automationsAt } from "./support/automations-at.js";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

async function refusal(work: () => unknown): Promise<{ code: string; message: string }> {
  const error = await Promise.resolve().then(work).then(() => undefined, (caught: unknown) => caught);
  expect(isAssemblyLineError(error), String(error)).toBe(true);
  return error as { code: string; message: string };
}

describe("an automation's schedule, checked wherever it is given", () => {
  it("is checked in an update like in a create: a schedule shaped like a stored one is no way around the checks", async () => {
    const { automations } = await automationsAt({}, "2026-03-01T08:00:00.000Z");
    await automations.create({ name: "poll", schedule: { every: 3_600_000 }, message: "poll" });
    for (const schedule of [{ kind: "every", everyMs: 5 }, { kind: "at", at: "garbage" }, { every: 5 }]) {
      expect((await refusal(() => automations.update("poll", { schedule: schedule as never }))).code).toBe("AL_ERR_AUTOMATION_SCHEDULE");
      expect((await refusal(() => automations.checkUpdate("poll", { schedule: schedule as never }))).code).toBe("AL_ERR_AUTOMATION_SCHEDULE");
    }
    expect((await automations.get("poll")).schedule).toEqual({ kind: "every", everyMs: 3_600_000 });
    // A patch without a schedule keeps the stored one.
    expect((await automations.update("poll", { message: "poll again" })).schedule).toEqual({ kind: "every", everyMs: 3_600_000 });
  });

  it("refuses an interval too long for a date, a one-shot time without its offset or on a day its month lacks, and a cron that matches no date", async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ every: 1e16 }, /every: 10000000000000000 is not a whole number of milliseconds from 1000 to 31622400000/],
      [{ at: "2026-12-01T09:00:00" }, /is not an ISO-8601 time with its offset/],
      [{ at: "2026-02-30T09:00:00Z" }, /names a day its month does not have/],
      ["0 9 30 2 *", /cron "0 9 30 2 \*" matches no date/],
    ];
    for (const [schedule, message] of cases) {
      const error = await refusal(() => normalizeSchedule(schedule as never, "automation \"x\""));
      expect(error.code, String(schedule)).toBe("AL_ERR_AUTOMATION_SCHEDULE");
      expect(error.message).toMatch(message);
    }
    // Every form of the offset RFC 3339 and ISO 8601 allow, read to the same instant.
    for (const at of ["2026-12-01T10:00:00+01:00", "2026-12-01T10:00:00+0100", "2026-12-01t09:00:00z", "2026-12-01T09:00:00.000Z"]) {
      expect(normalizeSchedule({ at }, "x"), at).toEqual({ kind: "at", at: "2026-12-01T09:00:00.000Z" });
    }
    expect(normalizeSchedule({ every: 366 * 86_400_000 }, "x")).toEqual({ kind: "every", everyMs: 366 * 86_400_000 });
  });
});

describe("a long outage", () => {
  it("is counted without walking every missed time of an interval, and a cron's count stops at 1,000 (walking each of a per-second cron's took over a minute, past the row's lease)", async () => {
    const every = await automationsAt({ "automations/tick.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: { every: 1000 }, message: "tick" });\n` }, "2026-03-01T00:00:00.000Z");
    every.clock.now = new Date("2026-03-03T00:00:00.000Z");
    const [interval] = await every.dispatchAll();
    expect(interval!.runs).toHaveLength(1);
    expect(every.submitted[0]!.metadata).toMatchObject({ automation: { missed: 172_800 } });

    const cron = await automationsAt({ "automations/sec.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: "* * * * * *", message: "tick" });\n` }, "2026-03-01T00:00:00.000Z");
    cron.clock.now = new Date("2026-03-03T00:00:00.000Z");
    const [perSecond] = await cron.dispatchAll();
    expect(perSecond!.runs).toHaveLength(1);
    expect(cron.submitted[0]!.metadata).toMatchObject({ automation: { missed: 1_000 } });
    expect(perSecond!.nextRunAt.toISOString()).toBe("2026-03-03T00:00:01.000Z");
  }, 60_000);
});

describe("what a one-shot time and a patch may hold", () => {
  it("refuses a one-shot time already past in create and update, before anyone approves it", async () => {
    const { automations, runs } = await automationsAt({}, "2026-03-01T08:00:00.000Z");
    const past = { at: "2025-03-01T09:00:00Z" };
    for (const attempt of [() => automations.check({ name: "remind", schedule: past, message: "remind me" }), () => automations.create({ name: "remind", schedule: past, message: "remind me" })]) {
      const error = await refusal(attempt);
      expect(error.code).toBe("AL_ERR_AUTOMATION_SCHEDULE");
      expect(error.message).toMatch(/at: 2025-03-01T09:00:00.000Z is already past/);
    }
    await automations.create({ name: "remind", schedule: { at: "2026-03-01T09:00:00Z" }, message: "remind me" });
    for (const attempt of [() => automations.checkUpdate("remind", { schedule: past }), () => automations.update("remind", { schedule: past })]) {
      expect((await refusal(attempt)).code).toBe("AL_ERR_AUTOMATION_SCHEDULE");
    }
    expect((await automations.get("remind")).nextRunAt).toBe("2026-03-01T09:00:00.000Z");
    expect(runs.size).toBe(0);
  });

  it("refuses null for a patch's message, enabled or schedule instead of keeping the stored value as if it were applied", async () => {
    const { automations } = await automationsAt({}, "2026-03-01T08:00:00.000Z");
    await automations.create({ name: "poll", schedule: { every: 60_000 }, message: "poll" });
    for (const patch of [{ message: null }, { enabled: null }, { schedule: null }]) {
      for (const attempt of [() => automations.checkUpdate("poll", patch as never), () => automations.update("poll", patch as never)]) {
        const error = await refusal(attempt);
        expect(error.code, JSON.stringify(patch)).toBe("AL_ERR_AUTOMATION_INPUT");
        expect(error.message).toMatch(new RegExp(`update of automation "poll": ${Object.keys(patch)[0]} is null`));
      }
    }
    // conversationId: null still means "join no conversation".
    expect((await automations.update("poll", { conversationId: null })).conversationId).toBeNull();
  });
});

describe("RuntimeOptions.automationCatchUpMs", () => {
  it("is refused unless a whole number of milliseconds from 0 to a timer's longest delay, naming the option", async () => {
    for (const automationCatchUpMs of [Number.NaN, Number.POSITIVE_INFINITY, -1, 1.5, "180000", 2_147_483_648]) {
      await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { automationCatchUpMs: automationCatchUpMs as number }), String(automationCatchUpMs)).rejects.toThrow(
        /automationCatchUpMs is .*; give a whole number of milliseconds from 0 to 2147483647 \(default 180000\)/,
      );
    }
    for (const automationCatchUpMs of [0, 600_000]) {
      const { runtime } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { automationCatchUpMs });
      expect(await runtime.automations.list()).toEqual([]);
    }
  });
});
