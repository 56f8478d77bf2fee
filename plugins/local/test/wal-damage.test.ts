import { isAssemblyLineError } from "@assemblyline-agents/core";
import { readFile, stat, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { WriteAheadLog } from "../src/state/write-ahead-log.js";
import { logLine, tempFolders } from "./support/state-folders.js";

// A crash mid-write tears only the last synced write, which was never acknowledged: the file state
// cuts it off on reopen. Damage anywhere else (bit rot, a bad sector, a hand edit) sits before
// records that were acknowledged; cutting there would drop them for good, so the folder is refused
// and the file left as it is. These tests hold the reader to telling the two apart.

const folders = tempFolders("al-wal-damage-");
afterEach(() => folders.removeAll());

/** A folder whose log holds `count` settings, each its own synced write (each call waited for). */
async function folderWithSettings(count: number): Promise<{ directory: string; log: string }> {
  const directory = await folders.make();
  const state = await FileStateAdapter.open({ directory });
  for (let index = 0; index < count; index += 1) await state.putSetting(`key-${index}`, { index, pad: "x".repeat(200) }, { actor: "t" });
  await state.close();
  return { directory, log: join(directory, "log-0.wal") };
}

/** The log's lines, each with its newline. */
async function linesOf(log: string): Promise<string[]> {
  return (await readFile(log, "utf8")).split(/(?<=\n)/);
}

/** `line` as a version before the write-start mark wrote it: its JSON without the leading space. */
function withoutMark(line: string): string {
  return logLine(JSON.parse(line.slice(9)));
}

/**
 * `lines` (each its own synced write) as if those from `first` on had gone to disk in one synced write:
 * only the first of them marked. Made so, as which calls a batch takes depends on the machine's timing.
 */
function oneWriteFrom(lines: string[], first: number): string[] {
  return lines.map((line, index) => (index > first ? withoutMark(line) : line));
}

/** Damage one byte of `bytes`, as bit rot would. */
function flipBit(bytes: Buffer, at: number): void {
  bytes[at] = bytes[at]! ^ 0x01;
}

async function openError(directory: string): Promise<unknown> {
  const state = await FileStateAdapter.open({ directory }).catch((error: unknown) => error);
  if (state instanceof FileStateAdapter) {
    await state.close();
    return undefined;
  }
  return state;
}

describe("file state log: damage before acknowledged records", () => {
  it("refuses a log written before the write marks whose damaged record intact ones follow, and cuts nothing", async () => {
    const { directory, log } = await folderWithSettings(50);
    const lines = (await linesOf(log)).map(withoutMark);
    expect(lines).toHaveLength(50);
    // One byte changed inside the 10th record's JSON: its checksum no longer matches.
    lines[9] = lines[9]!.replace('"pad":"x', '"pad":"y');
    const damaged = lines.join("");
    await writeFile(log, damaged);
    const damagedAt = Buffer.byteLength(lines.slice(0, 9).join(""));

    const error = await openError(directory);
    expect(isAssemblyLineError(error, "AL_ERR_STATE_ROW_INVALID")).toBe(true);
    expect((error as Error).message).toContain(`the record at byte ${damagedAt} is damaged`);
    expect((error as Error).message).toContain(`follow from byte ${damagedAt + Buffer.byteLength(lines[9]!)}`);
    expect(await readFile(log, "utf8")).toBe(damaged);

    // Cut where the fix says, the folder opens with the records before the damage.
    expect((error as { fix?: string }).fix).toContain(`truncate -s ${damagedAt} ${log}`);
    await truncate(log, damagedAt);
    const cut = await FileStateAdapter.open({ directory });
    expect(await cut.getSetting("key-8")).toMatchObject({ index: 8 });
    expect(await cut.getSetting("key-9")).toBeUndefined();
    await cut.close();
  });

  it("still cuts a torn last record off a log written before the write marks", async () => {
    const { directory, log } = await folderWithSettings(5);
    const lines = (await linesOf(log)).map(withoutMark);
    const intact = Buffer.byteLength(lines.slice(0, 4).join(""));
    // The last write reached the disk only in part: its checksum fails, nothing follows it.
    await writeFile(log, lines.slice(0, 4).join("") + lines[4]!.replace('"pad":"x', '"pad":"y'));

    const state = await FileStateAdapter.open({ directory });
    expect(await state.getSetting("key-3")).toMatchObject({ index: 3 });
    expect(await state.getSetting("key-4")).toBeUndefined();
    await state.close();
    expect((await stat(log)).size).toBe(intact);
  });

  it("refuses a log whose damaged newline runs the last write's first record into the record before it", async () => {
    const { directory, log } = await folderWithSettings(7);
    // Three writes of one record, then one of four.
    const lines = oneWriteFrom(await linesOf(log), 3);
    expect(lines.map((line) => line[9] === " ")).toEqual([true, true, true, true, false, false, false]);
    // One byte: the newline that ends the third record, a write acknowledged long before.
    const damagedAt = Buffer.byteLength(lines.slice(0, 2).join(""));
    const newlineAt = damagedAt + Buffer.byteLength(lines[2]!) - 1;
    const damaged = Buffer.from(lines.join(""));
    damaged[newlineAt] = 0x78;
    await writeFile(log, damaged);

    const error = await openError(directory);
    expect(isAssemblyLineError(error, "AL_ERR_STATE_ROW_INVALID")).toBe(true);
    expect((error as Error).message).toContain(`the record at byte ${damagedAt} is damaged`);
    expect((error as Error).message).toContain(`follow from byte ${newlineAt + 1}`);
    expect(await readFile(log)).toEqual(damaged);
  });

  it("still cuts the last synced write when its own records are damaged, and refuses it when they run into each other", async () => {
    const { directory, log } = await folderWithSettings(4);
    // One write of one record, then one of three.
    const lines = oneWriteFrom(await linesOf(log), 1);
    const written = Buffer.from(lines.join(""));

    // A torn write: the batch's first record damaged, its others intact after it. Cut, as ever.
    const torn = Buffer.from(written);
    flipBit(torn, Buffer.byteLength(lines[0]!) + 20);
    await writeFile(log, torn);
    const reopened = await FileStateAdapter.open({ directory });
    expect(await reopened.getSetting("key-0")).toMatchObject({ index: 0 });
    expect(await reopened.getSetting("key-1")).toBeUndefined();
    expect(await reopened.getSetting("key-3")).toBeUndefined();
    await reopened.close();
    expect((await stat(log)).size).toBe(Buffer.byteLength(lines[0]!));

    // The same as a log's first write, with no marked record before it: the damaged record's own mark shows the write.
    const fresh = await folderWithSettings(3);
    const tornFirst = Buffer.from(oneWriteFrom(await linesOf(fresh.log), 0).join(""));
    flipBit(tornFirst, 20);
    await writeFile(fresh.log, tornFirst);
    const reopenedFresh = await FileStateAdapter.open({ directory: fresh.directory });
    expect(await reopenedFresh.getSetting("key-2")).toBeUndefined();
    await reopenedFresh.close();
    expect((await stat(fresh.log)).size).toBe(0);

    // The batch's own newline damaged: the record after it is whole on the damaged line, which no torn write leaves.
    const merged = Buffer.from(written);
    merged[Buffer.byteLength(lines.slice(0, 3).join("")) - 1] = 0x20;
    await writeFile(log, merged);
    const error = await openError(directory);
    expect(isAssemblyLineError(error, "AL_ERR_STATE_ROW_INVALID")).toBe(true);
    expect(await readFile(log)).toEqual(merged);
  });
});

describe("file state log: a record whose checksum matches but that cannot be decoded", () => {
  it("refuses the folder, naming the record's byte and size, instead of cutting it off as a torn write", async () => {
    const { directory, log } = await folderWithSettings(2);
    const before = await readFile(log);
    // Checksummed as written, yet no JSON: not what a torn write leaves.
    const json = '{"ops":[';
    const line = `${crc32(Buffer.from(json)).toString(16).padStart(8, "0")} ${json}\n`;
    await writeFile(log, Buffer.concat([before, Buffer.from(line)]));

    const error = await openError(directory);
    expect(isAssemblyLineError(error, "AL_ERR_STATE_ROW_INVALID")).toBe(true);
    expect((error as Error).message).toContain(`the record at byte ${before.length} cannot be decoded`);
    expect((error as { details?: unknown }).details).toMatchObject({ path: log, at: before.length, bytes: line.length - 1 });
    expect((error as { fix?: string }).fix).toContain(`truncate -s ${before.length} ${log}`);
    expect(await readFile(log, "utf8")).toBe(before.toString("utf8") + line);
  });

  it("says a record too long for one string is intact but too long to read back, where it is and how long", async () => {
    const path = join(await folders.make(), "log-0.wal");
    const first = logLine({ index: 0 }, { startsWrite: true });
    const long = logLine({ index: 1, text: "stands for a record of over 512 MiB" }, { startsWrite: true });
    await writeFile(path, first + long + logLine({ index: 2 }, { startsWrite: true }));
    // Decoding a 540 MB line takes that much disk and memory: the decoder fails as Node.js does for one.
    const decode = (json: Buffer) => {
      if (!json.includes("512 MiB")) return JSON.parse(json.toString("utf8")) as unknown;
      throw Object.assign(new Error("Cannot create a string longer than 0x1fffffe8 characters"), { code: "ERR_STRING_TOO_LONG" });
    };
    const records: unknown[] = [];
    const error = await WriteAheadLog.read(path, (record) => records.push(record), undefined, decode).catch((caught: unknown) => caught);

    expect(isAssemblyLineError(error, "AL_ERR_STATE_ROW_INVALID")).toBe(true);
    const at = first.length;
    expect((error as Error).message).toContain(`${path} cannot be read back: the record at byte ${at} cannot be decoded: its ${long.length - 1} bytes are more than`);
    expect((error as Error).message).toContain(`Node.js ${process.version} decodes into one string`);
    expect((error as { fix?: string }).fix).toContain("The record is intact on disk, but too long to read back");
    expect((error as { fix?: string }).fix).toContain(`truncate -s ${at} ${path}`);
    expect(records).toEqual([{ index: 0 }]);
  });
});
