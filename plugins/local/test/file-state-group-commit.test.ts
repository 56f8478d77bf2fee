import fs, { constants, existsSync } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FileStateAdapter } from "../src/index.js";

// A batch of the log is durable when its synced write returns (the log is opened with
// O_DSYNC where the platform has it; elsewhere, when its fdatasync returns). On a fast
// disk a batch is written on the event loop (fs.writeSync), where the tests watch it;
// once the batches there were slow on average, batches go through FileHandle.prototype, where the tests
// hold each until they release it, to see what waits for what.
const folders: string[] = [];
const restores: Array<() => void> = [];
const restoreAll = () => {
  for (const restore of restores.splice(0).reverse()) restore();
};
afterEach(async () => {
  restoreAll();
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

const isLog = (fd: number) => {
  try {
    return /log-\d+\.wal$/.test(fs.readlinkSync(`/proc/self/fd/${fd}`));
  } catch {
    return false;
  }
};

type WriteSync = (fd: number, buffer: Buffer, offset?: number, length?: number, position?: number | null) => number;

/**
 * Replace fs.writeSync for the log's file with `replacement` (given the original): the log's
 * inline batches. Imported names of node:fs follow once syncBuiltinESMExports runs.
 */
function onInlineWrites(replacement: (original: WriteSync, fd: number, buffer: Buffer, offset: number, length: number, position: number | null) => number): void {
  const original = fs.writeSync as unknown as WriteSync;
  (fs as unknown as { writeSync: WriteSync }).writeSync = (fd, buffer, offset = 0, length = buffer.length - offset, position = null) =>
    isLog(fd) ? replacement(original, fd, buffer, offset, length, position) : original(fd, buffer, offset, length, position);
  syncBuiltinESMExports();
  restores.push(() => {
    (fs as unknown as { writeSync: WriteSync }).writeSync = original;
    syncBuiltinESMExports();
  });
}

/** Hold the thread for `ms`, as a synced write on a slow disk does. */
const blockFor = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** A disk whose every inline write takes `ms` longer: past 16 ms, its first batch sends the log's writes to the thread pool. */
function slowDisk(ms: number): void {
  onInlineWrites((original, fd, buffer, offset, length, position) => {
    blockFor(ms);
    return original(fd, buffer, offset, length, position);
  });
}

interface HeldSync {
  release: () => void;
  fail: (error: Error) => void;
  /** Records in the batch, where the sync is the log's write (O_DSYNC); NaN where it is an fdatasync. */
  records: number;
}

type Durable = (this: { fd: number }, ...args: unknown[]) => Promise<unknown>;

/**
 * Hold every sync of a log batch made through the thread pool until released; `started` lists them
 * in order. A slow disk (20 ms more per inline write) and one write on it first put the log there.
 */
async function holdSyncs(adapter: FileStateAdapter): Promise<{ started: HeldSync[]; next: () => Promise<HeldSync> }> {
  slowDisk(20);
  await adapter.createRun(newRun("slow-disk"));
  const probe = join(tmpdir(), `al-sync-probe-${process.pid}`);
  const handle = await open(probe, "w");
  const proto = Object.getPrototypeOf(handle) as Record<"write" | "datasync", Durable>;
  await handle.close();
  await rm(probe, { force: true });
  // With O_DSYNC the log's write is its sync; the handle does not keep its path, /proc does.
  const method = constants.O_DSYNC !== undefined ? "write" : "datasync";
  const original = proto[method];
  const started: HeldSync[] = [];
  const waiters: Array<(sync: HeldSync) => void> = [];
  proto[method] = async function (this: { fd: number }, ...args: unknown[]) {
    if (!isLog(this.fd)) return original.apply(this, args);
    return new Promise((resolve, reject) => {
      const [buffer, offset = 0, length] = args as [Buffer, number?, number?];
      const records = method === "write" ? buffer.subarray(offset, length === undefined ? undefined : offset + length).toString("utf8").split("\n").length - 1 : Number.NaN;
      const sync = { release: () => void original.apply(this, args).then(resolve, reject), fail: reject, records };
      started.push(sync);
      waiters.shift()?.(sync);
    });
  };
  restores.push(() => {
    proto[method] = original;
  });
  let taken = 0;
  const next = () => {
    const index = taken++;
    return started[index] ? Promise.resolve(started[index]!) : new Promise<HeldSync>((resolve) => waiters.push(resolve));
  };
  return { started, next };
}

const newRun = (id: string) => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

/** What `read` answers, having checked it did not answer while `sync` was held. */
async function answeredAfter<T>(sync: HeldSync, read: Promise<T>): Promise<T> {
  let answered = false;
  const reading = read.then((value) => {
    answered = true;
    return value;
  });
  await settle();
  expect(answered).toBe(false);
  sync.release();
  return reading;
}

/**
 * After a failed log write on a folder whose runs r0 and r1 were only created: the calls of the failed
 * batch and every later call fail, and a reopen (patches removed) finds the runs as acknowledged.
 */
/**
 * The calls of the failed write fail; the next call reads the folder back from disk (the records
 * that failed are dropped from the tables with it) and answers from what was acknowledged, as a
 * reopen does. No write is made after the failure: the sync stays faked until restoreAll.
 */
async function expectFailedWithNothingLost(directory: string, adapter: FileStateAdapter, lost: Array<Promise<unknown>>): Promise<void> {
  for (const call of lost) await expect(call).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
  expect((await adapter.getRun("r0"))?.lastSeq).toBe(1);
  expect((await adapter.getRun("r1"))?.lastSeq).toBe(1);
  expect((await adapter.listEvents("r0")).map((event) => event.type)).toEqual(["run.created"]);
  await adapter.close();
  restoreAll();
  const reopened = await FileStateAdapter.open({ directory });
  expect((await reopened.getRun("r0"))?.lastSeq).toBe(1);
  expect((await reopened.getRun("r1"))?.lastSeq).toBe(1);
  await reopened.close();
}

/**
 * An adapter with `count` runs. `onMemoryDisk`: its folder on tmpfs where there is one, for tests of
 * the inline path: synced writes there take microseconds, so a loaded machine's disk never sends the
 * log to the thread pool under them (the tests of that switch make the disk slow on purpose).
 */
async function adapterWithRuns(count: number, { onMemoryDisk = false } = {}): Promise<{ directory: string; adapter: FileStateAdapter }> {
  const base = onMemoryDisk && existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  const directory = await mkdtemp(join(base, "al-group-commit-"));
  folders.push(directory);
  const adapter = await FileStateAdapter.open({ directory });
  for (let i = 0; i < count; i++) await adapter.createRun(newRun(`r${i}`));
  return { directory, adapter };
}

describe("FileStateAdapter group commit through the thread pool, once the disk was slow", () => {
  it("puts every write that arrives during an fdatasync into one next fdatasync, acknowledging each only after its own", async () => {
    const { adapter } = await adapterWithRuns(20);
    const syncs = await holdSyncs(adapter);
    const acked: number[] = [];
    const first = adapter.appendEvents("r0", [{ type: "tick" }]).then(() => acked.push(0));
    const firstSync = await syncs.next();
    const rest = Array.from({ length: 19 }, (_, i) => adapter.appendEvents(`r${i + 1}`, [{ type: "tick" }]).then(() => acked.push(i + 1)));
    await settle();
    expect(acked).toEqual([]);
    expect(syncs.started).toHaveLength(1);

    firstSync.release();
    await first;
    const secondSync = await syncs.next();
    await settle();
    // The 19 later writes wait for the second fdatasync, which covers all of them.
    expect(acked).toEqual([0]);
    expect(syncs.started).toHaveLength(2);

    secondSync.release();
    await Promise.all(rest);
    expect(acked).toHaveLength(20);
    expect(syncs.started).toHaveLength(2);
    await adapter.close();
  });

  it.skipIf(constants.O_DSYNC === undefined)(
    "starts the next batch once half as many records as the last one wait, so callers that resume together are not split one from the rest",
    async () => {
      const { adapter } = await adapterWithRuns(20);
      const syncs = await holdSyncs(adapter);
      const tick = (run: string) => adapter.appendEvents(run, [{ type: "tick" }]);
      const first = tick("r0");
      const firstSync = await syncs.next();
      const group = Array.from({ length: 19 }, (_, i) => tick(`r${i + 1}`));
      firstSync.release();
      await first;
      const secondSync = await syncs.next();
      expect(secondSync.records).toBe(19);
      // One call arrives during the second sync; each of the 19 writes again as soon as it is acknowledged, as a run does.
      const straggler = tick("r0");
      const resumed = group.map((call, i) => call.then(() => tick(`r${i + 1}`)));
      secondSync.release();
      // Half of 19, rounded up: the straggler and 9 of them; the other 10 make the batch after.
      const thirdSync = await syncs.next();
      expect(thirdSync.records).toBe(10);
      await settle();
      expect(syncs.started).toHaveLength(3);
      thirdSync.release();
      const fourthSync = await syncs.next();
      expect(fourthSync.records).toBe(10);
      fourthSync.release();
      await Promise.all([straggler, ...resumed]);

      // A record that no resuming caller joins still starts its batch by the end of the turn.
      const opener = tick("r0");
      const openerSync = await syncs.next();
      const many = Array.from({ length: 10 }, (_, i) => tick(`r${i + 1}`));
      openerSync.release();
      await opener;
      const manySync = await syncs.next();
      expect(manySync.records).toBe(10);
      const lone = tick("r11");
      manySync.release();
      await Promise.all(many);
      await settle();
      expect(syncs.started).toHaveLength(7);
      const loneSync = syncs.started[6]!;
      expect(loneSync.records).toBe(1);
      loneSync.release();
      await lone;
      await adapter.close();
    },
  );

  it.skipIf(constants.O_DSYNC === undefined)("lets a lease's release made as a batch is acknowledged wait for the next write, not start a sync of its own", async () => {
    const { adapter } = await adapterWithRuns(2);
    const lease = await adapter.acquireRunLease("r0", "me", 60_000);
    const syncs = await holdSyncs(adapter);
    const write = adapter.appendEvents("r1", [{ type: "tick" }]);
    const sync = await syncs.next();
    const released = write.then(() => adapter.releaseRunLease("r0", "me", lease!.token));
    sync.release();
    await released;
    await settle();
    expect(syncs.started).toHaveLength(1);
    const next = adapter.appendEvents("r1", [{ type: "tock" }]);
    const nextSync = await syncs.next();
    expect(nextSync.records).toBe(2);
    nextSync.release();
    await next;
    await adapter.close();
  });

  it("syncs a lease's release made as a batch is acknowledged at once for a read that sees it", async () => {
    const { adapter } = await adapterWithRuns(2);
    const lease = await adapter.acquireRunLease("r0", "me", 60_000);
    const syncs = await holdSyncs(adapter);
    const write = adapter.appendEvents("r1", [{ type: "tick" }]);
    const sync = await syncs.next();
    const reading = write.then(() => adapter.releaseRunLease("r0", "me", lease!.token)).then(() => adapter.getRun("r0"));
    sync.release();
    // The read started the release's sync well before its 50 ms, and answers after it.
    await settle();
    expect(syncs.started).toHaveLength(2);
    syncs.started[1]!.release();
    expect((await reading)?.lease).toBeNull();
    await adapter.close();
  });

  it("answers a read only once the writes it saw are on disk", async () => {
    const { adapter } = await adapterWithRuns(1);
    const syncs = await holdSyncs(adapter);
    const write = adapter.appendEvents("r0", [{ type: "tick" }]);
    const sync = await syncs.next();
    expect((await answeredAfter(sync, adapter.getRun("r0")))?.lastSeq).toBe(2);
    await write;
    await adapter.close();
  });

  it("answers a memory or file read without waiting for another table's writes in flight, but not before a write of its own table", async () => {
    const { adapter } = await adapterWithRuns(1);
    await adapter.writeMemory("notes.md", "durable");
    await adapter.putFileRecord({ path: "/files/a.txt", blobKey: "b", size: 1, contentType: "text/plain", sha256: "s", runId: null, createdAt: new Date().toISOString() });
    const syncs = await holdSyncs(adapter);
    const write = adapter.appendEvents("r0", [{ type: "tick" }]);
    const sync = await syncs.next();
    // Nothing the run's append holds can be in these: they answer while it is still being synced.
    expect(await adapter.listMemory()).toEqual(["notes.md"]);
    expect((await adapter.listMemoryEntries()).map((entry) => entry.path)).toEqual(["notes.md"]);
    expect((await adapter.readMemory("notes.md"))?.content).toBe("durable");
    expect((await adapter.listFileRecords()).map((record) => record.path)).toEqual(["/files/a.txt"]);
    expect((await answeredAfter(sync, adapter.getRun("r0")))?.lastSeq).toBe(2);
    await write;

    // A memory write being synced: a read that sees it waits for it.
    const memoryWrite = adapter.writeMemory("notes.md", "newer");
    expect((await answeredAfter(await syncs.next(), adapter.readMemory("notes.md")))?.content).toBe("newer");
    await memoryWrite;
    await adapter.close();
  });

  it("answers a lease's release before it is on disk and syncs it with the next write, which waits for it", async () => {
    const { directory, adapter } = await adapterWithRuns(2);
    const lease = await adapter.acquireRunLease("r0", "me", 60_000);
    const syncs = await holdSyncs(adapter);
    // Answered with no fdatasync of its own started.
    await adapter.releaseRunLease("r0", "me", lease!.token, { observedSeq: 1 });
    expect(syncs.started).toHaveLength(0);
    // The next write carries it: one fdatasync for both, and the write is acknowledged only after it.
    let acked = false;
    const write = adapter.appendEvents("r1", [{ type: "tick" }]).then(() => (acked = true));
    const sync = await syncs.next();
    await settle();
    expect(acked).toBe(false);
    sync.release();
    await write;
    expect(syncs.started).toHaveLength(1);
    await adapter.close();
    restoreAll();
    const reopened = await FileStateAdapter.open({ directory });
    expect(await reopened.getRun("r0")).toMatchObject({ lease: null, observedSeq: 1 });
    await reopened.close();
  });

  it("syncs a release on its own when no write follows: at once for a read that sees it, else within 50 ms", async () => {
    const { directory, adapter } = await adapterWithRuns(2);
    const first = await adapter.acquireRunLease("r0", "me", 60_000);
    const second = await adapter.acquireRunLease("r1", "me", 60_000);
    const syncs = await holdSyncs(adapter);
    await adapter.releaseRunLease("r0", "me", first!.token);
    let read: unknown;
    const reading = adapter.getRun("r0").then((run) => (read = run?.lease));
    // The read started the fdatasync (well before the 50 ms) and answers only after it.
    await settle();
    expect(syncs.started).toHaveLength(1);
    const forRead = await syncs.next();
    expect(read).toBeUndefined();
    forRead.release();
    await reading;
    expect(read).toBeNull();

    await adapter.releaseRunLease("r1", "me", second!.token);
    const byTimer = await syncs.next();
    byTimer.release();
    await adapter.close();
    restoreAll();
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.getRun("r1"))?.lease).toBeNull();
    await reopened.close();
  });

  it("fails the writes of a failed fdatasync, and the next call finds only what was acknowledged, as a reopen does", async () => {
    const { directory, adapter } = await adapterWithRuns(2);
    const syncs = await holdSyncs(adapter);
    const lost = adapter.appendEvents("r0", [{ type: "lost" }]);
    const sync = await syncs.next();
    const alsoLost = adapter.appendEvents("r1", [{ type: "lost too" }]);
    await settle();
    sync.fail(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
    await expectFailedWithNothingLost(directory, adapter, [lost, alsoLost]);
  });
});

describe("FileStateAdapter group commit on the event loop", () => {
  it("writes the calls of one turn as one synced write at its end, and acknowledges none before that write returned", async () => {
    const { adapter } = await adapterWithRuns(20, { onMemoryDisk: true });
    const acked: number[] = [];
    const writes: Array<{ records: number; ackedBefore: number }> = [];
    onInlineWrites((original, fd, buffer, offset, length, position) => {
      writes.push({ records: buffer.subarray(offset, offset + length).toString("utf8").split("\n").length - 1, ackedBefore: acked.length });
      return original(fd, buffer, offset, length, position);
    });
    const calls = Array.from({ length: 20 }, (_, i) => adapter.appendEvents(`r${i}`, [{ type: "tick" }]).then(() => acked.push(i)));
    await Promise.all(calls);
    expect(writes).toEqual([{ records: 20, ackedBefore: 0 }]);
    await adapter.appendEvents("r0", [{ type: "tock" }]);
    expect(writes).toHaveLength(2);
    await adapter.close();
  });

  it("fails the calls of a failed inline write, and the next call finds only what was acknowledged, as a reopen does", async () => {
    const { directory, adapter } = await adapterWithRuns(2, { onMemoryDisk: true });
    onInlineWrites(() => {
      throw Object.assign(new Error("EIO: i/o error, write"), { code: "EIO" });
    });
    const lost = adapter.appendEvents("r0", [{ type: "lost" }]);
    const alsoLost = adapter.appendEvents("r1", [{ type: "lost too" }]);
    await expectFailedWithNothingLost(directory, adapter, [lost, alsoLost]);
  });

  it("brings writes back to the event loop a second after the disk was slow, also while writes never stop", async () => {
    const { directory, adapter } = await adapterWithRuns(8);
    let inline = 0;
    onInlineWrites((original, fd, buffer, offset, length, position) => {
      // The first inline batch is slow: later ones go through the thread pool.
      if (inline++ === 0) blockFor(30);
      return original(fd, buffer, offset, length, position);
    });
    // Eight writers that append again as soon as their last append is durable: the pool always has a next batch.
    let stop = false;
    const writers = Array.from({ length: 8 }, async (_, index) => {
      let count = 0;
      while (!stop) {
        await adapter.appendEvents(`r${index}`, [{ type: `tick ${count}` }]);
        count += 1;
      }
      return count;
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const inlineWhileWriting = inline;
    stop = true;
    const counts = await Promise.all(writers);
    expect(inlineWhileWriting).toBeGreaterThan(1);
    await adapter.close();
    restoreAll();
    const reopened = await FileStateAdapter.open({ directory });
    for (const [index, count] of counts.entries()) expect((await reopened.getRun(`r${index}`))?.lastSeq).toBe(1 + count);
    await reopened.close();
  });

  it("sends writes to the thread pool once the inline batches are slow on average, but not for one spike", async () => {
    const { directory, adapter } = await adapterWithRuns(1);
    const delays = [6, 0, 0, 0, 30];
    let inline = 0;
    // A clock that moves only by the delays given: the real disk's time, which a busy machine stretches, is no part of the average.
    let clock = 0;
    const now = vi.spyOn(performance, "now").mockImplementation(() => clock);
    onInlineWrites((original, fd, buffer, offset, length, position) => {
      clock += delays[inline++] ?? 0;
      return original(fd, buffer, offset, length, position);
    });
    try {
      for (let i = 0; i < 10; i++) await adapter.appendEvents("r0", [{ type: `tick ${i}` }]);
    } finally {
      now.mockRestore();
    }
    // A 6 ms spike leaves the writes on the event loop; a 30 ms batch moves every later one to the thread pool.
    expect(inline).toBe(5);
    await adapter.close();
    restoreAll();
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.getRun("r0"))?.lastSeq).toBe(11);
    await reopened.close();
  });
});
