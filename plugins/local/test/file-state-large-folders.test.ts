import { appendFile, open, readFile, stat, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileStateAdapter, type FileStateAdapterOptions } from "../src/index.js";
import { WriteAheadLog } from "../src/state/write-ahead-log.js";
import { logLine, tempFolders } from "./support/state-folders.js";

// A folder is opened by reading its snapshot and logs back. Node.js reads at most 2 GiB into one
// Buffer and makes no string longer than 512 MiB, so a folder whose log or snapshot outgrew those
// could no longer be opened at all: every run in it lost to the host. These tests hold the file
// state to reading both a piece at a time, and to reading the same records whatever the pieces.

const folders = tempFolders("al-file-state-large-");
const opened: FileStateAdapter[] = [];
afterEach(async () => {
  // Closed even when a test failed before closing them itself (closing twice is a no-op).
  for (const state of opened.splice(0)) await state.close();
  await folders.removeAll();
});

async function openState(options: FileStateAdapterOptions): Promise<FileStateAdapter> {
  const state = await FileStateAdapter.open(options);
  opened.push(state);
  return state;
}

const newRun = (id: string) => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });

/** Open `directory` and find the `files` memory files of `size` bytes its snapshot holds. */
async function expectBigMemory(directory: string, files: number, size: number): Promise<FileStateAdapter> {
  const reopened = await openState({ directory });
  const entries = await reopened.listMemoryEntries();
  expect(entries).toHaveLength(files);
  expect(entries.every((entry) => entry.size === size)).toBe(true);
  expect((await reopened.readMemory("big-39.md"))?.content.slice(0, 3)).toBe("xxx");
  return reopened;
}

/** Read `path` with `chunkBytes`, collecting what `read` hands over. */
async function readLog(path: string, chunkBytes?: number) {
  const records: unknown[] = [];
  const ends = await WriteAheadLog.read(path, (record) => records.push(record), chunkBytes);
  return { records, ...ends };
}

describe("WriteAheadLog.read, a piece at a time", () => {
  it("reads the same records, intact prefix and end of data, however the file is cut into pieces", async () => {
    const path = join(await folders.make(), "log-0.wal");
    const records = Array.from({ length: 25 }, (_, index) => ({ index, text: "é".repeat(index * 7) }));
    // Marked as the log's first synced write: in a log without marks, an intact record after a damaged one is no torn write.
    const lines = records.map((record, index) => logLine(record, { startsWrite: index === 0 })).join("");
    const intact = Buffer.byteLength(lines);
    // A torn record (a line whose checksum fails), then more records the reader must not take, then zeros.
    const torn = logLine({ index: 99 }).replace(/^./, (digit) => (digit === "0" ? "1" : "0"));
    await writeFile(path, Buffer.concat([Buffer.from(lines + torn + logLine({ index: 100 })), Buffer.alloc(3000)]));
    const dataEnd = intact + Buffer.byteLength(torn + logLine({ index: 100 }));
    for (const chunkBytes of [1, 7, 64, 1000, undefined]) {
      expect(await readLog(path, chunkBytes), String(chunkBytes)).toEqual({ records, validBytes: intact, totalBytes: dataEnd });
    }
  });

  it("finds where a later synced write starts past a damaged record, however the file is cut into pieces", async () => {
    const path = join(await folders.make(), "log-0.wal");
    const head = logLine({ index: 0 }, { startsWrite: true }) + logLine({ index: 1 });
    const damaged = logLine({ index: 2 }, { startsWrite: true }).replace('"index"', '"indez"');
    // Records of the damaged record's own write may follow it (a torn write), then a later write's.
    const sameWrite = logLine({ index: 3 });
    const later = logLine({ index: 4 }, { startsWrite: true }) + logLine({ index: 5 });
    const laterWriteAt = Buffer.byteLength(head + damaged + sameWrite);
    await writeFile(path, Buffer.concat([Buffer.from(head + damaged + sameWrite + later), Buffer.alloc(3000)]));
    for (const chunkBytes of [1, 7, 64, 1000, undefined]) {
      const read = await readLog(path, chunkBytes);
      expect(read.records, String(chunkBytes)).toEqual([{ index: 0 }, { index: 1 }]);
      expect(read.validBytes).toBe(Buffer.byteLength(head));
      expect(read.laterWriteAt, String(chunkBytes)).toBe(laterWriteAt);
    }

    // Zeros where the damaged write's first bytes never reached the disk, the rest of it did: a torn last write.
    const torn = Buffer.from(head + damaged.replace("indez", "index") + sameWrite);
    torn.fill(0, Buffer.byteLength(head), Buffer.byteLength(head) + 12);
    await writeFile(path, Buffer.concat([torn, Buffer.alloc(3000)]));
    for (const chunkBytes of [5, 64, undefined]) {
      expect(await readLog(path, chunkBytes)).toEqual({ records: [{ index: 0 }, { index: 1 }], validBytes: Buffer.byteLength(head), totalBytes: torn.length, laterWriteAt: undefined });
    }
    // The same with a later write after it: the zeros are then damage to a write already synced.
    await writeFile(path, Buffer.concat([torn, Buffer.from(later)]));
    expect((await readLog(path, 16)).laterWriteAt).toBe(torn.length);
  });

  it("stops at zeros, even where a line goes on after them, and counts only zeros as no data", async () => {
    const path = join(await folders.make(), "log-0.wal");
    const head = logLine({ index: 0 });
    const next = logLine({ index: 1 });
    // A write torn inside the second record: its first bytes never reached the disk.
    const holed = Buffer.from(head + next);
    holed.fill(0, Buffer.byteLength(head), Buffer.byteLength(head) + 5);
    await writeFile(path, Buffer.concat([holed, Buffer.alloc(100)]));
    for (const chunkBytes of [3, 16, undefined]) {
      expect(await readLog(path, chunkBytes)).toEqual({ records: [{ index: 0 }], validBytes: Buffer.byteLength(head), totalBytes: holed.length });
    }
    const onlyZeros = join(await folders.make(), "log-1.wal");
    await writeFile(onlyZeros, Buffer.alloc(50));
    expect(await readLog(onlyZeros, 8)).toEqual({ records: [], validBytes: 0, totalBytes: 0 });
    expect(await readLog(join(await folders.make(), "absent.wal"))).toEqual({ records: [], validBytes: 0, totalBytes: 0 });
  });
});

describe("FileStateAdapter: a folder past Node.js's read limits", () => {
  it("opens a folder whose log is longer than 2 GiB", async () => {
    const directory = await folders.make();
    const state = await openState({ directory });
    await state.createRun(newRun("r1"));
    await state.appendEvents("r1", [{ type: "note", data: { text: "kept" } }]);
    await state.close();
    // The log grown past 2 GiB: zeros after its records, as a fill ahead leaves them (a sparse file: no disk used).
    const log = join(directory, "log-0.wal");
    const records = (await stat(log)).size;
    await truncate(log, 2 ** 31 + 4096);

    const reopened = await openState({ directory });
    expect((await reopened.listEvents("r1")).map((event) => event.type)).toEqual(["run.created", "note"]);
    await reopened.appendEvents("r1", [{ type: "note", data: { text: "after" } }]);
    await reopened.close();
    expect((await stat(log)).size).toBeGreaterThan(records);
    expect((await stat(log)).size).toBeLessThan(records * 2);
    const again = await openState({ directory });
    expect((await again.listEvents("r1")).map((event) => event.data)).toEqual([expect.anything(), { text: "kept" }, { text: "after" }]);
    await again.close();
  }, 60_000);

  it("opens a folder whose snapshot is larger than the longest string Node.js can make", async () => {
    const directory = await folders.make();
    // A snapshot on disk (compacting on open) holding one run, then given 40 memory files of 16 MiB, a line each.
    const state = await openState({ directory });
    await state.createRun(newRun("r1"));
    await state.close();
    await (await openState({ directory, compactAfterBytes: 1, compactWhenSuperseded: 0 })).close();
    const snapshotPath = join(directory, "snapshot.json");
    const lines = (await readFile(snapshotPath, "utf8")).split("\n").slice(0, -1);
    expect(lines.at(-1)).toContain('["end",');
    const content = "x".repeat(16 * 1024 * 1024);
    const files = 40;
    const handle = await open(snapshotPath, "w");
    try {
      await handle.write(lines.slice(0, -1).map((line) => `${line}\n`).join(""));
      for (let index = 0; index < files; index += 1) {
        await handle.write(logLine(["memory", { path: `big-${String(index).padStart(2, "0")}.md`, content, updatedAt: "2030-01-01T00:00:00.000Z" }]));
      }
      await handle.write(logLine(["end", lines.length - 2 + files]));
    } finally {
      await handle.close();
    }
    expect((await stat(snapshotPath)).size).toBeGreaterThan(2 ** 29 + 2 ** 20);
    const reopened = await expectBigMemory(directory, files, content.length);
    expect((await reopened.getRun("r1"))?.status).toBe("queued");
    await reopened.close();
  }, 120_000);

  it("opens a folder whose snapshot of format 1, one JSON document, is larger than the longest string Node.js can make", async () => {
    const directory = await folders.make();
    // As versions before format 2 wrote it, with the tables this test fills.
    const snapshotPath = join(directory, "snapshot.json");
    const content = Buffer.alloc(16 * 1024 * 1024, "x");
    const files = 40;
    const handle = await open(snapshotPath, "w");
    try {
      await handle.write('{"format":1,"generation":1,"tables":{"runs":[],"memory":[');
      for (let index = 0; index < files; index += 1) {
        await handle.write(`${index === 0 ? "" : ","}{"path":"big-${String(index).padStart(2, "0")}.md","content":"`);
        await handle.write(content);
        await handle.write('","updatedAt":"2030-01-01T00:00:00.000Z"}');
      }
      await handle.write("]}}");
    } finally {
      await handle.close();
    }
    expect((await stat(snapshotPath)).size).toBeGreaterThan(2 ** 29 + 2 ** 20);
    await (await expectBigMemory(directory, files, content.length)).close();

    // Parsed in pieces, a damaged snapshot is refused as one read whole is.
    await appendFile(snapshotPath, "}");
    await expect(FileStateAdapter.open({ directory })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID" });
  }, 120_000);

  it("refuses a snapshot that is not JSON with the folder's error, and leaves it as it is", async () => {
    const directory = await folders.make();
    const state = await openState({ directory });
    await state.createRun(newRun("r1"));
    await state.close();
    await (await openState({ directory, compactAfterBytes: 1, compactWhenSuperseded: 0 })).close();
    const snapshotPath = join(directory, "snapshot.json");
    await appendFile(snapshotPath, "}");
    const damaged = await readFile(snapshotPath);
    await expect(FileStateAdapter.open({ directory })).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID" });
    expect(await readFile(snapshotPath)).toEqual(damaged);
  });
});
