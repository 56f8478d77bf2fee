import { describe, expect, it, onTestFinished, vi } from "vitest";
import type { ScheduleRecord } from "@assemblyline-agents/core";
import { LocalScheduler } from "@assemblyline-agents/local";
import { testPool } from "../../postgres/test/support/database.js";
import { postgresSchemas } from "./support/postgres-schemas.js";

/** Replicas of a host on one PostgreSQL schema, each with the local scheduler the host makes by default. */
const postgres = await postgresSchemas("schedules on the database clock", "al_sched_clock");

const HOUR = 3_600_000;
/** How far ahead the skewed replica's clock runs: more than the default lease (60 s). */
const SKEW_MS = 61_000;

async function databaseNow(): Promise<number> {
  const pool = testPool();
  try {
    const { rows } = await pool.query<{ now: Date }>("SELECT now() AS now");
    return rows[0]!.now.getTime();
  } finally {
    await pool.end();
  }
}

function schedule(id: string, nextRunAt: number): Omit<ScheduleRecord, "lease"> {
  return { id, intervalMs: HOUR, nextRunAt: new Date(nextRunAt).toISOString(), payload: { message: `run ${id}` }, enabled: true };
}

describe.skipIf(!postgres.available)("a local scheduler on PostgreSQL whose host clock runs ahead of the database's", () => {
  it("takes neither a schedule another replica holds nor one not yet due on the database clock, and still takes one that is due", async () => {
    const schema = postgres.newSchema();
    const steady = await postgres.state(schema);
    const skewed = await postgres.state(schema);
    onTestFinished(async () => {
      await steady.close();
      await skewed.close();
    });

    const dbNow = await databaseNow();
    await steady.upsertSchedule(schedule("held", dbNow - 1_000));
    await steady.upsertSchedule(schedule("not-yet-due", dbNow + 30_000));
    // The other replica holds "held" for the default lease, measured on the database clock.
    expect((await steady.claimDueSchedules({ owner: "steady-replica", ttlMs: 60_000 })).map((row) => row.id)).toEqual(["held"]);
    await steady.upsertSchedule(schedule("due", dbNow - 1_000));

    // Only this process's clock runs ahead: the database keeps its own.
    vi.useFakeTimers({ toFake: ["Date"], now: dbNow + SKEW_MS });
    onTestFinished(() => void vi.useRealTimers());
    const dispatched: string[] = [];
    let dueDispatched!: () => void;
    const dispatchedDue = new Promise<void>((resolve) => (dueDispatched = resolve));
    const scheduler = new LocalScheduler({ store: skewed, owner: "skewed-replica" });
    await scheduler.start(async (id) => {
      dispatched.push(id);
      if (id === "due") dueDispatched();
    });
    try {
      await dispatchedDue;
    } finally {
      await scheduler.stop();
    }

    expect(dispatched).toEqual(["due"]);
    expect((await steady.getSchedule("held"))?.lease?.owner).toBe("steady-replica");
    expect(await steady.getSchedule("not-yet-due")).toEqual({ ...schedule("not-yet-due", dbNow + 30_000), lease: null });
  });
});
