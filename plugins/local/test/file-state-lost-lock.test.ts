import { isAssemblyLineError } from "@assemblyline-agents/core";
import { readFile, stat, unlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { HEARTBEAT_STALE_MS } from "../src/state/folder-lock.js";
import { WriteAheadLog } from "../src/state/write-ahead-log.js";
import { tempFolders } from "./support/state-folders.js";

/*
 * A holder in another pid namespace is judged by its heartbeat: frozen past HEARTBEAT_STALE_MS, its
 * lock is taken over by the next opener, which replays the folder and writes on in the same log. When
 * the frozen holder wakes, before its own heartbeat has looked at LOCK, it must write nothing more
 * there: not the call it was about to make, nor the cut of its zeros when it closes.
 */

const folders = tempFolders("al-lost-lock-");
const adapters: FileStateAdapter[] = [];
afterEach(async () => {
  await Promise.all(adapters.splice(0).map((adapter) => adapter.close().catch(() => undefined)));
  await folders.removeAll();
});

const run = (id: string) => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: id, metadata: {} } });

const schedule = { id: "job-1", intervalMs: 60_000, nextRunAt: "2030-01-01T00:00:00.000Z", payload: { job: 1 }, enabled: true };

/**
 * A holder with run r1 (leased by "worker-a") and schedule job-1, frozen (as an opener in another pid
 * namespace sees it), and the opener that took its lock over and wrote r2.
 */
async function takenOver(): Promise<{ directory: string; frozen: FileStateAdapter; taker: FileStateAdapter }> {
  const directory = await folders.make();
  const lockPath = join(directory, "LOCK");
  const frozen = await FileStateAdapter.open({ directory });
  adapters.push(frozen);
  await frozen.createRun(run("r1"));
  expect(await frozen.acquireRunLease("r1", "worker-a", 60_000)).not.toBeNull();
  expect(await frozen.insertSchedule(schedule)).toBe(true);
  // Its LOCK as one in another pid namespace whose heartbeat stopped long ago: rewritten in place, still its own file.
  const lock = JSON.parse(await readFile(lockPath, "utf8")) as Record<string, unknown>;
  await writeFile(lockPath, JSON.stringify({ ...lock, pidNamespace: "another-boot pid:[1]" }));
  const longAgo = new Date(Date.now() - 3 * HEARTBEAT_STALE_MS);
  await utimes(lockPath, longAgo, longAgo);
  const taker = await FileStateAdapter.open({ directory });
  adapters.push(taker);
  await taker.createRun(run("r2"));
  // The frozen holder's last look at its LOCK is as old as its freeze: a takeover waits out a silent heartbeat.
  await sleep(50);
  return { directory, frozen, taker };
}

/** The folder as a new opener finds it once `taker` closed. */
async function reopened(directory: string, taker: FileStateAdapter): Promise<FileStateAdapter> {
  await taker.close();
  const adapter = await FileStateAdapter.open({ directory });
  adapters.push(adapter);
  return adapter;
}

describe("a file state whose lock another process took over", () => {
  it("keeps the records the new holder acknowledged when the old holder closes", async () => {
    const { directory, frozen, taker } = await takenOver();
    const log = join(directory, "log-0.wal");
    const before = (await stat(log)).size;

    await frozen.close();

    expect((await stat(log)).size, "the old holder cut the log it no longer writes").toBe(before);
    const state = await reopened(directory, taker);
    expect(await state.getRun("r1")).toBeDefined();
    expect(await state.getRun("r2")).toBeDefined();
  });

  it("refuses the first write after it wakes, before its heartbeat noticed, and writes nothing", async () => {
    const { directory, frozen, taker } = await takenOver();

    const stale = await frozen.createRun(run("stale")).then(
      () => "written",
      (error: unknown) => error,
    );
    expect(isAssemblyLineError(stale, "AL_ERR_STATE_LOCKED"), "the old holder wrote to the folder").toBe(true);
    expect((stale as Error).message).toContain("lost the lock");
    await expect(frozen.getRun("r1")).rejects.toMatchObject({ code: "AL_ERR_STATE_LOCKED" });

    await taker.createRun(run("r3"));
    const state = await reopened(directory, taker);
    expect(await state.getRun("r2")).toBeDefined();
    expect(await state.getRun("r3")).toBeDefined();
    expect(await state.getRun("stale")).toBeUndefined();
  });

  it("refuses reads, and writes that would change nothing, made after it wakes, before any write noticed", async () => {
    // Each the first call of a holder that just woke: answered from its tables, each would be stale.
    const calls: Array<[string, (state: FileStateAdapter) => Promise<unknown>]> = [
      ["getRun", (state) => state.getRun("r2")],
      ["listRuns", (state) => state.listRuns()],
      ["acquireRunLease of a leased run", (state) => state.acquireRunLease("r1", "worker-b", 60_000)],
      ["insertSchedule of a schedule it holds", (state) => state.insertSchedule(schedule)],
    ];
    for (const [name, call] of calls) {
      const { frozen } = await takenOver();
      const outcome = await call(frozen).then(
        (answer) => ({ answered: answer }),
        (error: unknown) => error,
      );
      expect(isAssemblyLineError(outcome, "AL_ERR_STATE_LOCKED"), `${name} was answered by a holder that lost the lock`).toBe(true);
      expect((outcome as Error).message).toContain("lost the lock");
    }
  });

  it("refuses writes once its LOCK file was deleted", async () => {
    const directory = await folders.make();
    const state = await FileStateAdapter.open({ directory });
    adapters.push(state);
    await state.createRun(run("r1"));
    await unlink(join(directory, "LOCK"));

    await expect(state.createRun(run("r2"))).rejects.toMatchObject({ code: "AL_ERR_STATE_LOCKED" });
  });
});

describe("a write-ahead log whose writes are refused", () => {
  it("fails the batch and later appends with the refusal, and neither writes nor cuts the file", async () => {
    const directory = await folders.make();
    const path = join(directory, "log-0.wal");
    let refusal: Error | undefined;
    const log = await WriteAheadLog.openForAppend(path, 0, () => refusal);
    await log.append('{"n":1}');
    const before = await readFile(path);

    refusal = new Error("the folder is another writer's now");
    await expect(log.append('{"n":2}')).rejects.toBe(refusal);
    await expect(log.append('{"n":3}')).rejects.toBe(refusal);
    await log.close();

    expect((await readFile(path)).equals(before)).toBe(true);
  });
});
