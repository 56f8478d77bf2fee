import { Cron, CronPattern } from "croner";
import { AssemblyLineError, type AutomationSchedule, type NormalizedSchedule } from "@assemblyline-agents/core";

/** Where a schedule that will not run again rests (a one-shot that ran). */
export const NEVER = new Date("9999-12-31T00:00:00.000Z");

/** The longest interval: rarer runs are a cron (yearly) or a one-shot, and a due time stays a valid date. */
const MAX_EVERY_MS = 366 * 86_400_000;

/** A one-shot time: a date, a time, and its offset (Z or ±hh:mm), so every replica reads the same instant. */
const AT_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})$/;

/**
 * Check and normalize a schedule: cron expressions through croner (5 or 6
 * fields), time zones through Intl (IANA names), intervals of at least 1 s,
 * one-shot times as ISO-8601. `where` names the input in errors.
 */
export function normalizeSchedule(schedule: AutomationSchedule, where: string): NormalizedSchedule {
  const fail = (problem: string): never => {
    throw new AssemblyLineError("AL_ERR_AUTOMATION_SCHEDULE", `${where}: ${problem}`, {
      fix: 'Use a cron expression ("*/5 * * * *", or 6 fields with seconds), { cron, timezone: "Europe/Paris" }, { every: 60000 } (ms) or { at: "2026-12-01T09:00:00Z" }.',
    });
  };
  if (typeof schedule === "string") return cron(schedule, "UTC", fail);
  if (typeof schedule !== "object" || schedule === null) return fail(`schedule ${JSON.stringify(schedule)} is not a cron string or an object`);
  const keys = Object.keys(schedule);
  if ("cron" in schedule) {
    const extra = keys.filter((key) => key !== "cron" && key !== "timezone");
    if (extra.length > 0) fail(`unknown schedule field ${extra.join(", ")}`);
    // Left out (or undefined) means UTC; null is refused, as null is for every other field.
    return cron(schedule.cron, schedule.timezone === undefined ? "UTC" : schedule.timezone, fail);
  }
  if ("every" in schedule) {
    if (keys.length !== 1) fail(`{ every } takes no other field (got ${keys.join(", ")})`);
    const everyMs = schedule.every;
    if (typeof everyMs !== "number" || !Number.isInteger(everyMs) || everyMs < 1_000 || everyMs > MAX_EVERY_MS) {
      fail(`every: ${JSON.stringify(everyMs)} is not a whole number of milliseconds from 1000 to ${MAX_EVERY_MS} (366 days); for rarer runs use a cron such as "0 9 1 1 *"`);
    }
    return { kind: "every", everyMs };
  }
  if ("at" in schedule) {
    if (keys.length !== 1) fail(`{ at } takes no other field (got ${keys.join(", ")})`);
    const text: unknown = schedule.at;
    const parts = typeof text === "string" ? AT_TIME.exec(text) : null;
    const at = parts ? Date.parse(text as string) : Number.NaN;
    if (!parts || !Number.isFinite(at)) fail(`at: ${JSON.stringify(text)} is not an ISO-8601 time with its offset, such as 2026-12-01T09:00:00Z or 2026-12-01T10:00:00+01:00 (without one, each machine would read it in its own time zone)`);
    // Date.parse rolls a day the month lacks over into the next month (February 30 becomes March 2).
    const [year, month, day] = [Number(parts![1]), Number(parts![2]), Number(parts![3])];
    const calendar = new Date(Date.UTC(year, month - 1, day));
    if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) fail(`at: ${JSON.stringify(text)} names a day its month does not have`);
    return { kind: "at", at: new Date(at).toISOString() };
  }
  return fail(`schedule has none of cron, every, at (got ${keys.join(", ") || "no field"})`);
}

function cron(expression: unknown, timezone: unknown, fail: (problem: string) => never): NormalizedSchedule {
  if (typeof expression !== "string" || expression.trim() === "") fail(`cron ${JSON.stringify(expression)} is not a cron expression`);
  if (typeof timezone !== "string") fail(`timezone ${JSON.stringify(timezone)} is not an IANA time zone name`);
  const text = (expression as string).trim();
  const fields = text.split(/\s+/);
  // croner reads a string holding ":" as a one-shot date, and "?" as the current time at each parse.
  if (!text.startsWith("@") && (fields.length < 5 || fields.length > 6)) fail(`cron ${JSON.stringify(text)} has ${fields.length} fields, not 5 (or 6 with seconds first); for one run at a set time use { at: "2026-12-01T09:00:00Z" }`);
  // croner drops an L after a weekday ("5L", Quartz's "last Friday"), which would run every Friday; its own spelling is "5#L".
  const dayOfWeek = text.startsWith("@") ? "" : fields[fields.length - 1]!;
  if (/(?<!#)L/i.test(dayOfWeek)) fail(`cron ${JSON.stringify(text)} has "L" in its day-of-week field (${JSON.stringify(dayOfWeek)}), which croner would ignore and run on every such day; for the last given weekday of the month write "#L" after it, e.g. "5#L" (the last Friday)`);
  if (text.includes("?")) fail(`cron ${JSON.stringify(text)} uses "?", which croner replaces with the time the schedule is read, so each replica and each read would see another schedule; write the value itself`);
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone as string });
  } catch {
    fail(`timezone ${JSON.stringify(timezone)} is not an IANA time zone name (e.g. "Europe/Paris", "UTC")`);
  }
  let parsed: Cron | undefined;
  try {
    parsed = new Cron(text, { timezone: timezone as string, paused: true });
  } catch (error) {
    fail(`cron ${JSON.stringify(text)} does not parse: ${(error as Error).message}`);
  }
  // "0 9 30 2 *" (February 30) parses, and would rest for ever looking like a one-shot that ran.
  if (parsed!.nextRun() === null) fail(`cron ${JSON.stringify(text)} matches no date (a day its month never has?)`);
  return { kind: "cron", expression: text, timezone: timezone as string };
}

/**
 * The first due time strictly after `after`; null when there is none (a one-shot already past). An
 * interval's due times are the multiples of it since the Unix epoch, whatever `after` is: a row
 * whose stored due time is off that series (an update that kept a due time of its old schedule)
 * comes back to it at its next due time.
 */
export function nextDueAfter(schedule: NormalizedSchedule, after: Date): Date | null {
  switch (schedule.kind) {
    case "cron":
      return nextCronTime(schedule.expression, schedule.timezone, after);
    case "every":
      return nextMultiple(schedule.everyMs, after);
    case "at": {
      const at = new Date(schedule.at);
      return at.getTime() > after.getTime() ? at : null;
    }
  }
}

/**
 * The next time of a cron schedule strictly after `after`. croner counts in
 * wall-clock time, so where daylight saving time ends and an hour repeats it
 * skips the repeated hour's instants (and, asked from inside that hour, can
 * answer a time before `after`). Vixie cron's rule is kept: a schedule that
 * fires every hour ("*\/5 * * * *") also fires through the repeated hour, one
 * at a set hour ("30 1 * * *") fires once.
 */
function nextCronTime(expression: string, timezone: string, after: Date): Date | null {
  const inZone = new Cron(expression, { timezone, paused: true });
  let next = inZone.nextRun(after) ?? null;
  const offset = offsetMinutes(timezone, new Date(after.getTime() + 1));
  // Also the offset in force shortly before: just after a spring change, times its gap skipped are still owed.
  const earlier = offsetMinutes(timezone, new Date(after.getTime() - MAX_SHIFT_MS));
  const fine = next !== null && next.getTime() > after.getTime();
  if (fine && offsetMinutes(timezone, next!) === offset && earlier === offset) return next;
  // An offset change lies near (or croner went back): count in each offset in force, keeping answers the zone agrees with.
  const everyHour = new CronPattern(expression, timezone).hour.every((hour) => hour === 1);
  const offsets = new Set([offset, earlier, offsetMinutes(timezone, next ?? new Date(after.getTime() + 86_400_000))]);
  let best = fine && (everyHour || !repeatedWallTime(timezone, next!)) ? next : null;
  for (const utcOffset of offsets) {
    const inOffset = new Cron(expression, { utcOffset, paused: true });
    let candidate = inOffset.nextRun(after) ?? null;
    // A set time's second pass through a repeated hour is not owed: its next one in this offset may be.
    if (!everyHour && candidate !== null && repeatedWallTime(timezone, candidate)) candidate = inOffset.nextRun(candidate) ?? null;
    // A shift of less than an hour (Lord Howe's 30 min) can leave the first answer before the change to this offset: look again from the change.
    for (let jumps = 0; candidate !== null && offsetMinutes(timezone, candidate) !== utcOffset && !skippedWallTime(timezone, candidate, utcOffset) && jumps < 2; jumps++) {
      const change = nextOffsetChange(timezone, candidate);
      candidate = change === null ? null : (inOffset.nextRun(new Date(change.getTime() - 1)) ?? null);
    }
    if (candidate === null || candidate.getTime() <= after.getTime()) continue;
    if (offsetMinutes(timezone, candidate) !== utcOffset && !skippedWallTime(timezone, candidate, utcOffset)) continue;
    if (!everyHour && repeatedWallTime(timezone, candidate)) continue;
    if (best === null || candidate.getTime() < best.getTime()) best = candidate;
  }
  if (best !== null) return best;
  // Asked from inside a repeated hour, croner maps the wall time back to its first pass (or, for a set time, answers
  // its second pass): look again past the repetition.
  for (let hours = 1; next !== null && (next.getTime() <= after.getTime() || (!everyHour && repeatedWallTime(timezone, next))) && hours <= 4; hours++) {
    next = inZone.nextRun(new Date(after.getTime() + hours * 3_600_000)) ?? null;
  }
  return next;
}

/** The largest daylight saving shift a zone makes (Antarctica/Troll's 2 h). */
const MAX_SHIFT_MS = 2 * 3_600_000;

/**
 * Whether `at`, read in `utcOffset` (the offset before a spring change), is a wall time the change
 * skipped: such a time runs at that instant, as croner places a skipped time of a whole-hour shift.
 */
function skippedWallTime(timezone: string, at: Date, utcOffset: number): boolean {
  const gap = offsetMinutes(timezone, at) - utcOffset;
  return gap > 0 && offsetMinutes(timezone, new Date(at.getTime() - gap * 60_000)) === utcOffset;
}

/** The first instant after `from`, within a day, at which the zone's offset changes (to the second); null when none. */
function nextOffsetChange(timezone: string, from: Date): Date | null {
  const start = offsetMinutes(timezone, from);
  let low = from.getTime();
  let high = low + 86_400_000;
  if (offsetMinutes(timezone, new Date(high)) === start) return null;
  while (high - low > 1_000) {
    const middle = low + Math.floor((high - low) / 2);
    if (offsetMinutes(timezone, new Date(middle)) === start) low = middle;
    else high = middle;
  }
  return new Date(high);
}

/** The zone's UTC offset at `at`, in minutes (east positive). */
function offsetMinutes(timezone: string, at: Date): number {
  const name = new Intl.DateTimeFormat("en-US", { timeZone: timezone, timeZoneName: "longOffset" }).formatToParts(at).find((part) => part.type === "timeZoneName")?.value ?? "GMT";
  const match = /GMT([+-])(\d{2}):(\d{2})/.exec(name);
  return match ? (match[1] === "-" ? -1 : 1) * (Number(match[2]) * 60 + Number(match[3])) : 0;
}

/** Whether the wall-clock time at `at` already happened earlier, under the offset in force before a fall-back. */
function repeatedWallTime(timezone: string, at: Date): boolean {
  const now = offsetMinutes(timezone, at);
  const before = offsetMinutes(timezone, new Date(at.getTime() - 86_400_000));
  if (before <= now) return false;
  const earlier = new Date(at.getTime() - (before - now) * 60_000);
  return offsetMinutes(timezone, earlier) === before;
}

/**
 * The first due time of a schedule defined at `now`: the next cron slot, the
 * next multiple of the interval since the epoch, or the one-shot time (NEVER
 * when that is past). Each
 * depends only on the definition and the slot `now` falls in, so replicas
 * syncing the same automation at nearly the same moment write the same row.
 */
export function firstDueTime(schedule: NormalizedSchedule, now: Date): Date {
  // A one-shot time already past (a file synced after it) is not run late: the schedule rests.
  if (schedule.kind === "at") return Date.parse(schedule.at) >= now.getTime() ? new Date(schedule.at) : NEVER;
  return nextDueAfter(schedule, now) ?? NEVER;
}

/** The first multiple of `everyMs` since the Unix epoch strictly after `after`. */
function nextMultiple(everyMs: number, after: Date): Date {
  return new Date((Math.floor(after.getTime() / everyMs) + 1) * everyMs);
}

/**
 * Whether two normalized schedules are one schedule: a cron expression compared field by field
 * (the spaces between fields do not count), the time zone, the interval, the one-shot instant. An
 * update that gives the stored schedule again does not re-time the automation.
 */
export function schedulesEqual(a: NormalizedSchedule, b: NormalizedSchedule): boolean {
  switch (a.kind) {
    case "cron":
      return b.kind === "cron" && cronFields(a.expression) === cronFields(b.expression) && a.timezone === b.timezone;
    case "every":
      return b.kind === "every" && a.everyMs === b.everyMs;
    case "at":
      return b.kind === "at" && Date.parse(a.at) === Date.parse(b.at);
  }
}

function cronFields(expression: string): string {
  return expression.trim().split(/\s+/).join(" ");
}

/** Counting stops here: a per-second cron down for days would take minutes to count one by one, past its lease. */
export const MAX_COUNTED_MISSES = 1_000;

/**
 * How many due times from `first` (itself due) to `now` a schedule missed: exact for an interval
 * and a one-shot; a cron's counted up to MAX_COUNTED_MISSES (`atLeast` then).
 */
export function countMissed(schedule: NormalizedSchedule, first: Date, now: Date): { count: number; atLeast: boolean } {
  if (first.getTime() > now.getTime()) return { count: 0, atLeast: false };
  if (schedule.kind === "at") return { count: 1, atLeast: false };
  // `first`, then the interval's multiples after it up to now (`first` itself may be off the series).
  if (schedule.kind === "every") return { count: Math.floor(now.getTime() / schedule.everyMs) - Math.floor(first.getTime() / schedule.everyMs) + 1, atLeast: false };
  let count = 0;
  for (let due: Date | null = first; due && due.getTime() <= now.getTime(); due = nextDueAfter(schedule, due)) {
    if (++count >= MAX_COUNTED_MISSES) return { count, atLeast: true };
  }
  return { count, atLeast: false };
}

/**
 * The last due time from `first` (itself due, at or before `now`) to `now`: `first` when no other
 * due time follows it by `now`. Found by halving the span between them (a few dozen steps
 * however long the host was down), not by stepping through every due time of it.
 */
export function lastDueBy(schedule: NormalizedSchedule, first: Date, now: Date): Date {
  const dueBy = (from: number) => {
    const next = nextDueAfter(schedule, new Date(from));
    return next !== null && next.getTime() <= now.getTime();
  };
  if (!dueBy(first.getTime())) return first;
  // The latest instant whose next due time is still at or before now: that next due time is the last.
  let low = first.getTime();
  let high = now.getTime();
  while (high - low > 1) {
    const middle = low + Math.floor((high - low) / 2);
    if (dueBy(middle)) low = middle;
    else high = middle;
  }
  return nextDueAfter(schedule, new Date(low))!;
}
