import { Cron } from "croner";
import { AssemblyLineError, type AutomationSchedule, type NormalizedSchedule } from "@assemblyline-agents/core";

/** Where a schedule that will not run again rests (a one-shot that ran). */
export const NEVER = new Date("9999-12-31T00:00:00.000Z");

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
    return cron(schedule.cron, schedule.timezone ?? "UTC", fail);
  }
  if ("every" in schedule) {
    if (keys.length !== 1) fail(`{ every } takes no other field (got ${keys.join(", ")})`);
    const everyMs = schedule.every;
    if (typeof everyMs !== "number" || !Number.isInteger(everyMs) || everyMs < 1_000) fail(`every: ${JSON.stringify(everyMs)} is not a whole number of milliseconds >= 1000`);
    return { kind: "every", everyMs };
  }
  if ("at" in schedule) {
    if (keys.length !== 1) fail(`{ at } takes no other field (got ${keys.join(", ")})`);
    const at = typeof schedule.at === "string" ? Date.parse(schedule.at) : Number.NaN;
    if (!Number.isFinite(at) || !/^\d{4}-\d{2}-\d{2}T/.test(schedule.at)) fail(`at: ${JSON.stringify(schedule.at)} is not an ISO-8601 time such as 2026-12-01T09:00:00Z`);
    return { kind: "at", at: new Date(at).toISOString() };
  }
  return fail(`schedule has none of cron, every, at (got ${keys.join(", ") || "no field"})`);
}

function cron(expression: unknown, timezone: unknown, fail: (problem: string) => never): NormalizedSchedule {
  if (typeof expression !== "string" || expression.trim() === "") fail(`cron ${JSON.stringify(expression)} is not a cron expression`);
  if (typeof timezone !== "string") fail(`timezone ${JSON.stringify(timezone)} is not an IANA time zone name`);
  const text = (expression as string).trim();
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone as string });
  } catch {
    fail(`timezone ${JSON.stringify(timezone)} is not an IANA time zone name (e.g. "Europe/Paris", "UTC")`);
  }
  try {
    new Cron(text, { timezone: timezone as string, paused: true });
  } catch (error) {
    fail(`cron ${JSON.stringify(text)} does not parse: ${(error as Error).message}`);
  }
  return { kind: "cron", expression: text, timezone: timezone as string };
}

/** The first due time strictly after `after`; null when there is none (a one-shot already past). */
export function nextDueAfter(schedule: NormalizedSchedule, after: Date): Date | null {
  switch (schedule.kind) {
    case "cron":
      return new Cron(schedule.expression, { timezone: schedule.timezone, paused: true }).nextRun(after) ?? null;
    case "every":
      return new Date(after.getTime() + schedule.everyMs);
    case "at": {
      const at = new Date(schedule.at);
      return at.getTime() > after.getTime() ? at : null;
    }
  }
}

/**
 * The first due time of a schedule defined at `now`: the next cron slot, the
 * next multiple of the interval since the epoch, or the one-shot time. Each
 * depends only on the definition and the slot `now` falls in, so replicas
 * syncing the same automation at nearly the same moment write the same row.
 */
export function firstDueTime(schedule: NormalizedSchedule, now: Date): Date {
  if (schedule.kind === "at") return new Date(schedule.at);
  if (schedule.kind === "every") return new Date((Math.floor(now.getTime() / schedule.everyMs) + 1) * schedule.everyMs);
  return nextDueAfter(schedule, now) ?? NEVER;
}
