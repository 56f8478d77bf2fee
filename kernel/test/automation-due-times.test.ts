import { describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { nextDueAfter, normalizeSchedule } from "@assemblyline-agents/runtime";
import { automationsAt } from "./support/automations-at.js";

const automation = (schedule: string, extra = "") => `import { defineAutomation } from "@assemblyline-agents/core";
export default defineAutomation({ schedule: ${schedule}, message: "send the report"${extra} });
`;

async function refusal(work: () => unknown): Promise<{ code: string; message: string; fix?: string }> {
  const error = await Promise.resolve().then(work).then(() => undefined, (caught: unknown) => caught);
  expect(isAssemblyLineError(error)).toBe(true);
  return error as { code: string; message: string; fix?: string };
}


describe("automations that were disabled", () => {
  it("a static automation switched from enabled: false to true starts at its next due time, with no run for the time it rested", async () => {
    const { make, bundle, clock, dispatchAll, runs } = await automationsAt({ "automations/daily.ts": automation(`"0 9 * * *"`, ", enabled: false") }, "2026-03-01T08:00:00.000Z");
    clock.now = new Date("2026-03-20T12:00:00.000Z");
    expect(await dispatchAll()).toEqual([]);
    // The next build turns it on.
    const enabled = make(bundle.manifest.automations.map((entry) => ({ ...entry, enabled: true })));
    await enabled.syncStatic();
    expect((await enabled.get("daily")).nextRunAt).toBe("2026-03-21T09:00:00.000Z");
    expect(await dispatchAll()).toEqual([]);
    expect(runs.size).toBe(0);
  });

  it("a dynamic automation updated to enabled: true starts at its next due time", async () => {
    const { automations, clock, dispatchAll, runs } = await automationsAt({}, "2026-03-01T08:00:00.000Z");
    await automations.create({ name: "poll", schedule: { every: 3_600_000 }, message: "poll", enabled: false });
    clock.now = new Date("2026-03-05T10:20:00.000Z");
    const updated = await automations.update("poll", { enabled: true });
    expect(updated.nextRunAt).toBe("2026-03-05T11:00:00.000Z");
    expect(await dispatchAll()).toEqual([]);
    expect(runs.size).toBe(0);
  });
});

describe("a one-shot whose time passed while it rested", () => {
  it("is not run when resumed, re-enabled by an update, or re-enabled by a rebuilt file: it rests", async () => {
    const { automations, make, bundle, clock, dispatchAll, runs } = await automationsAt({ "automations/launch.ts": automation(`{ at: "2026-03-01T09:00:00Z" }`, ", enabled: false") }, "2026-03-01T08:00:00.000Z");
    await automations.create({ name: "paused", schedule: { at: "2026-03-01T09:00:00Z" }, message: "announce" });
    await automations.setPaused("paused", true);
    await automations.create({ name: "disabled", schedule: { at: "2026-03-01T09:00:00Z" }, message: "announce", enabled: false });
    clock.now = new Date("2026-03-10T12:00:00.000Z");
    expect((await automations.setPaused("paused", false)).nextRunAt).toBeNull();
    expect((await automations.update("disabled", { enabled: true })).nextRunAt).toBeNull();
    const enabled = make(bundle.manifest.automations.map((entry) => ({ ...entry, enabled: true })));
    await enabled.syncStatic();
    expect((await enabled.get("launch")).nextRunAt).toBeNull();
    expect(await dispatchAll()).toEqual([]);
    expect(runs.size).toBe(0);
  });

  it("from a file synced after its time (a new file or a changed time) rests too, with a warning, instead of failing the build or running late", async () => {
    const { automations, clock, dispatchAll, runs } = await automationsAt({ "automations/launch.ts": automation(`{ at: "2026-03-01T09:00:00Z" }`) }, "2026-03-02T08:00:00.000Z");
    expect((await automations.get("launch")).nextRunAt).toBeNull();
    clock.now = new Date("2026-03-03T08:00:00.000Z");
    expect(await dispatchAll()).toEqual([]);
    expect(runs.size).toBe(0);
  });
});

describe("interval schedules after downtime or a pause", () => {
  it("continue on the interval's series after collapsed missed due times", async () => {
    const { clock, dispatchAll } = await automationsAt({ "automations/hourly.ts": automation(`{ every: 3_600_000 }`) }, "2026-03-01T10:30:00.000Z");
    clock.now = new Date("2026-03-02T10:59:00.000Z");
    const [result] = await dispatchAll();
    expect(result!.runs).toHaveLength(1);
    // 11:00 is the series' next due time; now + 1 h (11:59) would drop it.
    expect(result!.nextRunAt.toISOString()).toBe("2026-03-02T11:00:00.000Z");
  });

  it("are aligned to the Unix epoch: a 24 h interval made mid-afternoon is due at 00:00 UTC, then each midnight", async () => {
    const { automations, clock, dispatchAll } = await automationsAt({}, "2026-03-01T15:37:12.000Z");
    expect((await automations.create({ name: "daily", schedule: { every: 86_400_000 }, message: "daily" })).nextRunAt).toBe("2026-03-02T00:00:00.000Z");
    clock.now = new Date("2026-03-02T00:00:01.000Z");
    await dispatchAll();
    expect((await automations.get("daily")).nextRunAt).toBe("2026-03-03T00:00:00.000Z");
  });

  it("resume on the interval's series", async () => {
    const { automations, clock } = await automationsAt({ "automations/tick.ts": automation(`{ every: 60000 }`) }, "2026-03-01T10:00:00.000Z");
    await automations.setPaused("tick", true);
    clock.now = new Date("2026-03-01T10:30:20.000Z");
    expect((await automations.setPaused("tick", false)).nextRunAt).toBe("2026-03-01T10:31:00.000Z");
  });
});

describe("a replica that died while dispatching", () => {
  it("loses none of the due times after the one it started: the next replica runs each once the default lease (60 s) expires", async () => {
    const { automations, clock, state, runs } = await automationsAt({ "automations/often.ts": automation(`{ every: 20_000 }`) }, "2026-03-01T10:00:05.000Z");
    clock.now = new Date("2026-03-01T10:00:20.000Z");
    const [row] = await state.claimDueSchedules({ owner: "dead", ttlMs: 60_000, now: clock.now });
    await automations.dispatchDue(row!); // submits 10:00:20, then the replica dies before moving the row
    expect(runs.size).toBe(1);
    clock.now = new Date("2026-03-01T10:01:21.000Z");
    const [again] = await state.claimDueSchedules({ owner: "survivor", ttlMs: 60_000, now: clock.now });
    const result = await automations.dispatchDue(again!);
    expect(result.runs.map((run) => [run.dueAt, run.created])).toEqual([
      ["2026-03-01T10:00:20.000Z", false],
      ["2026-03-01T10:00:40.000Z", true],
      ["2026-03-01T10:01:00.000Z", true],
      ["2026-03-01T10:01:20.000Z", true],
    ]);
    expect(result.nextRunAt.toISOString()).toBe("2026-03-01T10:01:40.000Z");
    // A second dispatch of the same claim (a stalled replica waking up) starts nothing more.
    expect((await automations.dispatchDue(again!)).runs.filter((run) => run.created)).toEqual([]);
  });
});

describe("a replica that died after submitting, then a host down past the catch-up window", () => {
  it("runs the missed due times once, apart from the run the dead replica had started", async () => {
    const { automations, clock, state, runs } = await automationsAt({ "automations/often.ts": automation(`"*/10 * * * *"`) }, "2026-03-02T09:55:00.000Z");
    clock.now = new Date("2026-03-02T10:00:01.000Z");
    const [row] = await state.claimDueSchedules({ owner: "dead", ttlMs: 60_000, now: clock.now });
    expect((await automations.dispatchDue(row!)).runs.map((run) => run.created)).toEqual([true]); // 10:00, then it dies
    clock.now = new Date("2026-03-02T11:00:30.000Z");
    const [again] = await state.claimDueSchedules({ owner: "survivor", ttlMs: 60_000, now: clock.now });
    const result = await automations.dispatchDue(again!);
    // One run stands for 10:00-11:00; it is not the 10:00 run the dead replica submitted.
    expect(result.runs.map((run) => [run.dueAt, run.created])).toEqual([["2026-03-02T10:00:00.000Z", true]]);
    expect(runs.size).toBe(2);
    expect(result.nextRunAt.toISOString()).toBe("2026-03-02T11:10:00.000Z");
    // The survivor dying too before moving the row: the next dispatch's collapsed run is the same one.
    expect((await automations.dispatchDue(again!)).runs.map((run) => run.created)).toEqual([false]);
  });
});

describe("an automation edited while a dispatch holds its row", () => {
  it("keeps the new schedule's next due time instead of the old schedule's", async () => {
    const { automations, clock, state } = await automationsAt({}, "2026-03-01T08:00:00.000Z");
    await automations.create({ name: "report", schedule: "0 9 * * *", message: "report" });
    clock.now = new Date("2026-03-01T09:00:01.000Z");
    const [row] = await state.claimDueSchedules({ owner: "scheduler", ttlMs: 60_000, now: clock.now });
    // While the dispatch runs, the agent moves the report to 17:00.
    await automations.update("report", { schedule: "0 17 * * *" });
    const result = await automations.dispatchDue(row!);
    await state.completeScheduleRun(row!.id, "scheduler", result.nextRunAt);
    expect((await automations.get("report")).nextRunAt).toBe("2026-03-01T17:00:00.000Z");
  });
});

describe("fields nothing reads", () => {
  it("are refused on create and update, naming the field and the fix", async () => {
    const { automations } = await automationsAt({}, "2026-03-01T08:00:00.000Z");
    const misplaced = await refusal(() => automations.create({ name: "digest", schedule: "0 8 * * *", message: "m", timezone: "Europe/Paris" } as never));
    expect(misplaced).toMatchObject({ code: "AL_ERR_AUTOMATION_INPUT", message: expect.stringContaining("timezone") });
    expect(misplaced.fix).toContain('{ cron: "0 9 * * *", timezone: "Europe/Paris" }');
    expect(await automations.list()).toEqual([]);
    await automations.create({ name: "digest", schedule: "0 8 * * *", message: "m" });
    const rename = await refusal(() => automations.update("digest", { name: "morning" } as never));
    expect(rename).toMatchObject({ code: "AL_ERR_AUTOMATION_INPUT", message: expect.stringContaining("name") });
    await expect(automations.checkUpdate("digest", { messages: "x" } as never)).rejects.toMatchObject({ code: "AL_ERR_AUTOMATION_INPUT" });
    expect((await automations.get("digest")).message).toBe("m");
  });
});

describe("cron schedules", () => {
  it("refuse a null timezone rather than reading it as UTC (left out, it is UTC)", async () => {
    expect(await refusal(() => normalizeSchedule({ cron: "0 9 * * *", timezone: null } as never, "automation \"x\""))).toMatchObject({ code: "AL_ERR_AUTOMATION_SCHEDULE", message: expect.stringContaining("timezone null") });
    expect(normalizeSchedule({ cron: "0 9 * * *" }, "x")).toEqual({ kind: "cron", expression: "0 9 * * *", timezone: "UTC" });
  });

  it("refuse a date string and '?', which croner would read as a one-shot and as the time of reading", async () => {
    expect(await refusal(() => normalizeSchedule("2026-12-01T09:00:00Z", "automation \"x\""))).toMatchObject({ code: "AL_ERR_AUTOMATION_SCHEDULE", message: expect.stringMatching(/automation "x".*fields.*\{ at/) });
    expect(await refusal(() => normalizeSchedule("? * * * *", "automation \"x\""))).toMatchObject({ code: "AL_ERR_AUTOMATION_SCHEDULE", message: expect.stringContaining('"?"') });
    expect(normalizeSchedule("@daily", "x")).toEqual({ kind: "cron", expression: "@daily", timezone: "UTC" });
  });

  it('refuse an "L" after a weekday ("5L", Quartz\'s last Friday), which croner would run every Friday, and take croner\'s own "5#L"', async () => {
    for (const expression of ["0 9 * * 5L", "0 9 * * FRIL", "0 9 * * 1-5L", "0 0 9 * * 5L"]) {
      expect(await refusal(() => normalizeSchedule(expression, "automation \"x\""))).toMatchObject({ code: "AL_ERR_AUTOMATION_SCHEDULE", message: expect.stringContaining('"5#L"') });
    }
    const lastFriday = normalizeSchedule("0 9 * * 5#L", "x");
    const times: string[] = [];
    for (let at: Date | null = new Date("2026-12-07T00:00:00Z"); times.length < 3; ) times.push((at = nextDueAfter(lastFriday, at!))!.toISOString());
    expect(times).toEqual(["2026-12-25T09:00:00.000Z", "2027-01-29T09:00:00.000Z", "2027-02-26T09:00:00.000Z"]);
    // July is a month name, not a weekday: its L is no concern.
    expect(normalizeSchedule("0 9 1 JUL *", "x")).toMatchObject({ kind: "cron" });
  });

  it("keep firing every half hour through the hour repeated when daylight saving time ends", () => {
    const halfHourly = normalizeSchedule({ cron: "*/30 * * * *", timezone: "America/New_York" }, "test");
    const times: string[] = [];
    for (let at: Date | null = new Date("2026-11-01T05:10:00Z"); times.length < 5; ) times.push((at = nextDueAfter(halfHourly, at!))!.toISOString());
    // 01:30 EDT, 01:00 EST, 01:30 EST, 02:00 EST, 02:30 EST: one every 30 minutes.
    expect(times).toEqual(["2026-11-01T05:30:00.000Z", "2026-11-01T06:00:00.000Z", "2026-11-01T06:30:00.000Z", "2026-11-01T07:00:00.000Z", "2026-11-01T07:30:00.000Z"]);
  });

  it("follow a half-hour shift (Australia/Lord_Howe): the repeated half hour fires again, the skipped one's times run once each", () => {
    const every20 = normalizeSchedule({ cron: "*/20 * * * *", timezone: "Australia/Lord_Howe" }, "test");
    const from = (start: string, count: number) => {
      const times: string[] = [];
      for (let at: Date | null = new Date(start); times.length < count; ) times.push((at = nextDueAfter(every20, at!))!.toISOString());
      return times;
    };
    // Autumn, 02:00 +11:00 becomes 01:30 +10:30: 01:20, 01:40, then 01:40 again (+10:30), 02:00.
    expect(from("2026-04-04T14:00:00Z", 4)).toEqual(["2026-04-04T14:20:00.000Z", "2026-04-04T14:40:00.000Z", "2026-04-04T15:10:00.000Z", "2026-04-04T15:30:00.000Z"]);
    // Spring, 02:00 +10:30 becomes 02:30 +11:00: 02:00 and 02:20 do not exist and run 30 minutes on (02:30, 02:50), between 02:40 and 03:00.
    expect(from("2026-10-03T15:00:00Z", 5)).toEqual(["2026-10-03T15:10:00.000Z", "2026-10-03T15:30:00.000Z", "2026-10-03T15:40:00.000Z", "2026-10-03T15:50:00.000Z", "2026-10-03T16:00:00.000Z"]);
  });

  it("fire a set time once on the day it repeats, and never answer a time before the one asked from", () => {
    const daily = normalizeSchedule({ cron: "45 1 * * *", timezone: "America/New_York" }, "test");
    expect(nextDueAfter(daily, new Date("2026-11-01T05:00:00Z"))?.toISOString()).toBe("2026-11-01T05:45:00.000Z");
    expect(nextDueAfter(daily, new Date("2026-11-01T05:45:00Z"))?.toISOString()).toBe("2026-11-02T06:45:00.000Z");
    // From inside the repeated hour (01:10 EST), not back to 01:45 EDT.
    expect(nextDueAfter(daily, new Date("2026-11-01T06:10:00Z"))?.toISOString()).toBe("2026-11-02T06:45:00.000Z");
    // Spring forward: 02:30 does not exist; it runs once, at 03:30 EDT, as croner places it.
    const early = normalizeSchedule({ cron: "30 2 * * *", timezone: "America/New_York" }, "test");
    expect(nextDueAfter(early, new Date("2026-03-08T05:00:00Z"))?.toISOString()).toBe("2026-03-08T07:30:00.000Z");
    expect(nextDueAfter(early, new Date("2026-03-08T07:30:00Z"))?.toISOString()).toBe("2026-03-09T06:30:00.000Z");
    const halfHourly = normalizeSchedule({ cron: "*/30 * * * *", timezone: "America/New_York" }, "test");
    expect(nextDueAfter(halfHourly, new Date("2026-03-08T06:30:00Z"))?.toISOString()).toBe("2026-03-08T07:00:00.000Z");
  });

  it("answer from any time what the series steps to, so a catch-up or resume inside a repeated hour does not run a set time twice", () => {
    // Paris, 2026-10-25: 03:00 CEST falls back to 02:00 CET at 01:00Z; 02:30 ran at 00:30Z (CEST).
    const paris = normalizeSchedule({ cron: "30 2 * * *", timezone: "Europe/Paris" }, "test");
    expect(nextDueAfter(paris, new Date("2026-10-25T01:05:00Z"))?.toISOString()).toBe("2026-10-26T01:30:00.000Z");
    const zones = ["Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Antarctica/Troll", "Pacific/Chatham", "America/Santiago"];
    const expressions = ["30 2 * * *", "0 2 * * *", "45 1 * * *", "0 3 * * *", "15 3 * * *", "0 */2 * * *", "*/15 * * * *"];
    const mismatches: string[] = [];
    for (const timezone of zones) {
      for (const change of offsetChanges(timezone, 2026)) {
        for (const cron of expressions) {
          const schedule = normalizeSchedule({ cron, timezone }, "test");
          const series: number[] = [];
          for (let at = new Date(change - 4 * 3_600_000); at.getTime() < change + 30 * 3_600_000; ) series.push((at = nextDueAfter(schedule, at)!).getTime());
          // Every 7 min 13 s through the hours around the change.
          for (let asked = change - 3 * 3_600_000; asked < change + 3 * 3_600_000; asked += 7 * 60_000 + 13_000) {
            const answer = nextDueAfter(schedule, new Date(asked))!.getTime();
            if (answer !== series.find((due) => due > asked)) mismatches.push(`${timezone} ${cron} from ${new Date(asked).toISOString()}: ${new Date(answer).toISOString()}`);
          }
        }
      }
    }
    expect(mismatches).toEqual([]);
  }, 120_000);
});

/** The instants in `year` at which `timezone`'s UTC offset changes (to the hour). */
function offsetChanges(timezone: string, year: number): number[] {
  const format = new Intl.DateTimeFormat("en-US", { timeZone: timezone, timeZoneName: "longOffset" });
  const offset = (at: number) => format.format(at).split("GMT")[1];
  const changes: number[] = [];
  let previous = offset(Date.UTC(year, 0, 1));
  for (let at = Date.UTC(year, 0, 1); at < Date.UTC(year + 1, 0, 1); at += 3_600_000) {
    const current = offset(at);
    if (current !== previous) changes.push(at);
    previous = current;
  }
  return changes;
}
