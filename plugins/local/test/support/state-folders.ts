import { copyFile, mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { expect } from "vitest";

/**
 * Temp folders for one test file: `make` a new one, `removeAll` in the file's afterEach,
 * so each test's folders are gone before the next test starts.
 */
export function tempFolders(prefix: string) {
  const made: string[] = [];
  return {
    async make(): Promise<string> {
      const folder = await mkdtemp(join(tmpdir(), prefix));
      made.push(folder);
      return folder;
    },
    async removeAll(): Promise<void> {
      await Promise.all(made.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
    },
  };
}

/** What a kill -9 now would leave of the state folder `directory`: its snapshot and logs, copied into `copy`. */
export async function crashCopy(directory: string, copy: string): Promise<string> {
  for (const name of await readdir(directory)) {
    if (name === "snapshot.json" || name.endsWith(".wal")) await copyFile(join(directory, name), join(copy, name));
  }
  return copy;
}

/**
 * `record` as one line of the file state's log: `<crc32 of the JSON, 8 hex digits> <JSON>\n`, the JSON
 * starting with a space when the record `startsWrite` (the first of a synced write).
 */
export function logLine(record: unknown, { startsWrite = false } = {}): string {
  const json = `${startsWrite ? " " : ""}${JSON.stringify(record)}`;
  return `${crc32(Buffer.from(json)).toString(16).padStart(8, "0")} ${json}\n`;
}

/** The snapshot of `directory` (format 2: a checksummed line per row), as its header and its rows by table. */
export async function readSnapshotRows(directory: string): Promise<{ header: Record<string, unknown>; tables: Record<string, any[]>; end: unknown }> {
  const lines = (await readFile(join(directory, "snapshot.json"), "utf8")).split("\n");
  expect(lines.pop()).toBe("");
  const records = lines.map((line) => {
    const json = line.slice(9);
    expect(line.slice(0, 9)).toBe(`${crc32(Buffer.from(json)).toString(16).padStart(8, "0")} `);
    return JSON.parse(json) as unknown;
  });
  const [header, ...rows] = records as [Record<string, unknown>, ...Array<[string, unknown]>];
  const [, end] = rows.pop()!;
  const tables: Record<string, any[]> = {};
  for (const [table, row] of rows) (tables[table] ??= []).push(row);
  return { header, tables, end };
}
