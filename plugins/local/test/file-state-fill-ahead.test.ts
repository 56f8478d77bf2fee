import { constants } from "node:fs";
import { open, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { crashCopy as copyStateFolder, logLine, tempFolders } from "./support/state-folders.js";

// Where the platform has O_DSYNC, the log writes its batches into zeros written ahead of its
// last record, so a synced write need not commit a new file size. These tests hold the file
// state to what that must not change: every acknowledged record survives a crash, zeros are
// never taken for a record (nor for a torn one), and a closed log ends at its last record.
const fillsAhead = constants.O_DSYNC !== undefined;

const folders = tempFolders("al-file-state-fill-");
const tempFolder = () => folders.make();
afterEach(() => folders.removeAll());

const newRun = (id: string) => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
const tick = (index: number) => [{ type: "tick", data: { index, padding: "x".repeat(500) } }];

/** Where the log's records end: after its last newline. */
const recordsEnd = (bytes: Buffer) => bytes.lastIndexOf(0x0a) + 1;

/** What a kill -9 now would leave of `directory`, in a new folder. */
const crashCopy = async (directory: string) => copyStateFolder(directory, await tempFolder());

/** The log line that creates run r1, as a record of the log holds it. */
function runCreatedLine(): string {
  const at = new Date().toISOString();
  const run = { id: "r1", agentId: "agent", agentRevision: "rev", conversationId: null, status: "queued", modelSpec: "scripted/test", input: { message: "hi", metadata: {} }, output: null, error: null, lastSeq: 1, observedSeq: 0, lease: null, createdAt: at, updatedAt: at };
  return logLine({ ops: [{ op: "run.create", run, ordinal: 1, idempotencyKey: null }] });
}

describe.skipIf(!fillsAhead)("FileStateAdapter log: zeros filled ahead", () => {
  it("writes the records into zeros ahead of them while open, and a closed log ends at its last record", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory });
    await state.createRun(newRun("r1"));
    for (let index = 1; index <= 40; index += 1) await state.appendEvents("r1", tick(index));
    const log = join(directory, "log-0.wal");
    const whileOpen = await readFile(log);
    const end = recordsEnd(whileOpen);
    expect(whileOpen.length).toBeGreaterThan(end);
    expect(whileOpen.subarray(end).every((byte) => byte === 0)).toBe(true);
    await state.close();
    expect((await stat(log)).size).toBe(end);
  });

  it("keeps every acknowledged record through a crash, and writes on after the reopen", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory });
    await state.createRun(newRun("r1"));
    for (let index = 1; index <= 30; index += 1) await state.appendEvents("r1", tick(index));
    const crashed = await crashCopy(directory);
    await state.close();
    expect((await readFile(join(crashed, "log-0.wal"))).at(-1)).toBe(0);

    const reopened = await FileStateAdapter.open({ directory: crashed });
    expect((await reopened.listEvents("r1")).map((event) => event.seq)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
    for (let index = 31; index <= 60; index += 1) await reopened.appendEvents("r1", tick(index));
    await reopened.close();
    const again = await FileStateAdapter.open({ directory: crashed });
    const events = await again.listEvents("r1");
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 61 }, (_, i) => i + 1));
    expect(events.at(-1)?.data).toMatchObject({ index: 60 });
    await again.close();
  });

  it("never writes a record where zeros are still being filled: the batch waits for the fill", async () => {
    const directory = await tempFolder();
    const probe = join(directory, "probe");
    const handle = await open(probe, "w");
    const proto = Object.getPrototypeOf(handle) as { writev: (...args: unknown[]) => Promise<unknown> };
    await handle.close();
    await rm(probe);
    const writev = proto.writev;
    const held: Array<() => void> = [];
    // Each fill (the log's only writev) starts only once released, as on a disk that is slow to take it.
    proto.writev = function (this: unknown, ...args: unknown[]) {
      return new Promise<void>((resolve) => held.push(resolve)).then(() => writev.apply(this, args));
    };
    try {
      const state = await FileStateAdapter.open({ directory });
      await state.createRun(newRun("r1"));
      expect(held).toHaveLength(1);
      let acknowledged = false;
      const append = state.appendEvents("r1", tick(1)).then(() => (acknowledged = true));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(acknowledged).toBe(false);
      held.shift()!();
      await append;
      // Let any later fill go at once.
      proto.writev = writev;
      for (const release of held.splice(0)) release();
      const crashed = await crashCopy(directory);
      await state.close();
      const reopened = await FileStateAdapter.open({ directory: crashed });
      expect((await reopened.listEvents("r1")).map((event) => event.type)).toEqual(["run.created", "tick"]);
      await reopened.close();
    } finally {
      proto.writev = writev;
      for (const release of held.splice(0)) release();
    }
  });

  it("opens a log that ends in zeros and that a later log follows (a crash before the old log was closed)", async () => {
    const directory = await tempFolder();
    await writeFile(join(directory, "log-0.wal"), Buffer.concat([Buffer.from(runCreatedLine()), Buffer.alloc(64 * 1024)]));
    const later = { ops: [{ op: "events.append", runId: "r1", createdAt: new Date().toISOString(), events: [{ seq: 2, type: "later", data: {} }] }, { op: "run.patch", runId: "r1", set: { lastSeq: 2 } }] };
    await writeFile(join(directory, "log-1.wal"), logLine(later));
    const state = await FileStateAdapter.open({ directory });
    expect((await state.listEvents("r1")).map((event) => event.type)).toEqual(["run.created", "later"]);
    await state.close();
  });

  it("still refuses a log with a torn record that a later log follows, zeros after it or not", async () => {
    const directory = await tempFolder();
    await writeFile(join(directory, "log-0.wal"), Buffer.concat([Buffer.from(runCreatedLine()), Buffer.from('0badc0de {"ops":[{"op":"run.pa'), Buffer.alloc(4096)]));
    await writeFile(join(directory, "log-1.wal"), "");
    await expect(FileStateAdapter.open({ directory })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID", message: expect.stringContaining("log-0.wal") });
  });
});
