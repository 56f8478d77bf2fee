import { appendFile, cp, mkdtemp, open, readdir, readlink, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";

const folders: string[] = [];
async function tempFolder(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), "al-file-state-compaction-"));
  folders.push(folder);
  return folder;
}

/**
 * Hold every fsync of a snapshot temp file until `release()`: the snapshot is then
 * being written, as a large one is for a while. fdatasyncs (the log) and the folder's
 * fsyncs pass. The path is read from /proc, as the handle does not keep it.
 */
async function holdSnapshotSyncs() {
  const probe = await open(join(tmpdir(), `al-compaction-probe-${process.pid}`), "w");
  const proto = Object.getPrototypeOf(probe) as { sync: (this: { fd: number }) => Promise<void> };
  await probe.close();
  await rm(join(tmpdir(), `al-compaction-probe-${process.pid}`), { force: true });
  const original = proto.sync;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = 0;
  proto.sync = async function (this: { fd: number }) {
    const path = await readlink(`/proc/self/fd/${this.fd}`).catch(() => "");
    if (/snapshot\.json\..*\.tmp$/.test(path)) {
      held += 1;
      await released;
    }
    return original.call(this);
  };
  return {
    held: () => held,
    release,
    restore: () => {
      release();
      proto.sync = original;
    },
  };
}

let restoreSyncs: (() => void) | undefined;
afterEach(async () => {
  restoreSyncs?.();
  restoreSyncs = undefined;
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

const newRun = (id: string) => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
const tick = (index: number) => [{ type: "tick", data: { index, padding: "x".repeat(200) } }];
const logsIn = async (directory: string) => (await readdir(directory)).filter((name) => name.endsWith(".wal")).sort();

describe("FileStateAdapter compaction", () => {
  it("never makes a write wait for the snapshot, and a crash while it is written loses nothing", async () => {
    const directory = await tempFolder();
    const syncs = await holdSnapshotSyncs();
    restoreSyncs = syncs.restore;
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000 });
    await state.createRun(newRun("r1"));
    let index = 0;
    while (syncs.held() === 0) await state.appendEvents("r1", tick((index += 1)));
    // The snapshot cannot finish; writes still commit, in the next generation's log.
    for (let more = 0; more < 30; more += 1) await state.appendEvents("r1", tick((index += 1)));
    expect(await logsIn(directory)).toEqual(["log-0.wal", "log-1.wal"]);

    // What a kill -9 now would leave: the old snapshot (none), both logs and a half-written temp file.
    const crashed = await tempFolder();
    await cp(directory, crashed, { recursive: true });
    await unlink(join(crashed, "LOCK"));
    syncs.restore();
    const reopened = await FileStateAdapter.open({ directory: crashed });
    expect((await reopened.listEvents("r1")).map((event) => event.seq)).toEqual(Array.from({ length: index + 1 }, (_, i) => i + 1));
    await reopened.close();
    // Reopening folded both logs into a snapshot.
    expect(await logsIn(crashed)).toEqual(["log-2.wal"]);
    expect((await readdir(crashed)).filter((name) => name.endsWith(".tmp"))).toEqual([]);

    await state.close();
    expect(await logsIn(directory)).toEqual(["log-1.wal"]);
    // The snapshot holds the tables as they were at the cut, not the writes made while it was written.
    const again = await FileStateAdapter.open({ directory });
    expect((await again.listEvents("r1")).map((event) => event.seq)).toEqual(Array.from({ length: index + 1 }, (_, i) => i + 1));
    await again.close();
  });

  it("replays a snapshot that replaced the old one before the old log was deleted, and deletes that log", async () => {
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000 });
    await state.createRun(newRun("r1"));
    for (let index = 1; index <= 60; index += 1) await state.appendEvents("r1", tick(index));
    await state.close();
    const logs = await logsIn(directory);
    expect(logs).toHaveLength(1);
    // The crash came after the rename: a log the snapshot already holds is still there (replayed, it would add seq 62).
    const current = Number(logs[0]!.slice(4, -4));
    const json = JSON.stringify({ ops: [{ op: "events.append", runId: "r1", events: [{ id: "r1:62", runId: "r1", seq: 62, type: "tick", data: {}, createdAt: new Date().toISOString() }] }] });
    await appendFile(join(directory, `log-${current - 1}.wal`), `${crc32(Buffer.from(json)).toString(16).padStart(8, "0")} ${json}\n`);
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.listEvents("r1")).map((event) => event.seq)).toEqual(Array.from({ length: 61 }, (_, i) => i + 1));
    await reopened.close();
    expect(await logsIn(directory)).toEqual([`log-${current}.wal`]);
  });

  it("refuses to open a folder whose logs cannot be replayed in order, and changes nothing in it", async () => {
    const syncs = await holdSnapshotSyncs();
    restoreSyncs = syncs.restore;
    const directory = await tempFolder();
    const state = await FileStateAdapter.open({ directory, compactAfterBytes: 4_000 });
    await state.createRun(newRun("r1"));
    let index = 0;
    while (syncs.held() === 0) await state.appendEvents("r1", tick((index += 1)));
    await state.appendEvents("r1", tick((index += 1)));
    const copyOf = async () => {
      const folder = await tempFolder();
      await cp(directory, folder, { recursive: true });
      await unlink(join(folder, "LOCK"));
      return folder;
    };
    const torn = await copyOf();
    const missing = await copyOf();
    syncs.restore();
    await state.close();

    // A torn record can only end the last log; in an earlier one, records after it depend on what it held.
    await appendFile(join(torn, "log-0.wal"), '1a2b3c4d {"ops":[{"op":"events.app');
    await expect(FileStateAdapter.open({ directory: torn })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID" });
    expect(await logsIn(torn)).toEqual(["log-0.wal", "log-1.wal"]);

    await unlink(join(missing, "log-0.wal"));
    await appendFile(join(missing, "log-2.wal"), "");
    await rm(join(missing, "log-1.wal"));
    await expect(FileStateAdapter.open({ directory: missing })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID", message: expect.stringContaining("log-2.wal") });
    expect(await logsIn(missing)).toEqual(["log-2.wal"]);
  });
});
