import { isAssemblyLineError } from "@assemblyline-agents/core";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { tempFolders } from "./support/state-folders.js";

/*
 * A damaged line is searched for a record held whole at its end (a damaged newline). Tool output in
 * the state (hexdump, sha256sum) is full of "<8 hex digits> {" and "<8 hex digits>  ": were each a
 * checksum over the rest of the line, opening a folder with one damaged line of a few MiB would take
 * minutes, and every opening pays it. Checksums are counted through node:zlib's crc32.
 */

const checksums = vi.hoisted(() => ({ count: 0 }));
vi.mock("node:zlib", async (importOriginal) => {
  const zlib = await importOriginal<typeof import("node:zlib")>();
  return {
    ...zlib,
    crc32: (...args: Parameters<typeof zlib.crc32>) => {
      checksums.count += 1;
      return zlib.crc32(...args);
    },
  };
});

const folders = tempFolders("al-wal-damage-scan-");
afterEach(() => folders.removeAll());

/** Hexdump-like text of about `bytes`: offsets of 8 hex digits, each followed by " {" or "  {". */
function hexdumpText(bytes: number): string {
  const rows: string[] = [];
  for (let offset = 0, length = 0; length < bytes; offset += 16) {
    const row = `${offset.toString(16).padStart(8, "0")}${offset % 32 === 0 ? " " : "  "}{7b 22 6f 70 73 22 3a 5b}|{ops:[|\n`;
    rows.push(row);
    length += row.length;
  }
  return rows.join("");
}

/** A folder whose log holds a small setting, a setting of `dump`, and a small one after it: one synced write each. */
async function folderWithDump(dump: string): Promise<{ directory: string; log: string; lineStarts: number[] }> {
  const directory = await folders.make();
  const state = await FileStateAdapter.open({ directory });
  await state.putSetting("before", "small", { actor: "t" });
  await state.putSetting("dump", dump, { actor: "t" });
  await state.putSetting("after", "small", { actor: "t" });
  await state.close();
  const log = join(directory, "log-0.wal");
  const bytes = await readFile(log);
  const lineStarts = [0];
  for (let newline = bytes.indexOf(0x0a); newline >= 0 && newline + 1 < bytes.length; newline = bytes.indexOf(0x0a, newline + 1)) lineStarts.push(newline + 1);
  expect(lineStarts).toHaveLength(3);
  return { directory, log, lineStarts };
}

describe("file state log: a damaged line full of hex digits and spaces", () => {
  it("is cut as a torn last write with a checksum per record, not one per '<hex> {' in it", async () => {
    const dump = hexdumpText(256 * 1024);
    // Thousands of places a record's start could be, were only the byte after the space looked at.
    expect(dump.match(/[0-9a-f]{8} {1,2}\{/g)!.length).toBeGreaterThan(5_000);
    const { directory, log, lineStarts } = await folderWithDump(dump);
    // The last write is the dump's: drop the one after it, and damage the dump's record near its start.
    const bytes = (await readFile(log)).subarray(0, lineStarts[2]);
    bytes[lineStarts[1]! + 40]! ^= 0x01;
    await writeFile(log, bytes);

    checksums.count = 0;
    const state = await FileStateAdapter.open({ directory });
    expect(checksums.count).toBeLessThan(20);
    expect(await state.getSetting("before")).toBe("small");
    expect(await state.getSetting("dump")).toBeUndefined();
    await state.close();
    expect((await stat(log)).size).toBe(lineStarts[1]);
  });

  it("still finds the record a damaged newline ran into the dump's line, and refuses the folder", async () => {
    const { directory, log, lineStarts } = await folderWithDump(hexdumpText(256 * 1024));
    const damaged = await readFile(log);
    // The newline that ends the dump's record, a write acknowledged before the next.
    damaged[lineStarts[2]! - 1] = 0x20;
    await writeFile(log, damaged);

    checksums.count = 0;
    const error = await FileStateAdapter.open({ directory }).catch((failure: unknown) => failure);
    expect(isAssemblyLineError(error, "AL_ERR_STATE_ROW_INVALID")).toBe(true);
    expect((error as Error).message).toContain(`the record at byte ${lineStarts[1]} is damaged`);
    expect((error as Error).message).toContain(`follow from byte ${lineStarts[2]}`);
    expect(checksums.count).toBeLessThan(20);
    expect(await readFile(log)).toEqual(damaged);
  });
});
