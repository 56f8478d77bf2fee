import { checkListLimit, checkMemoryWrite, type MemoryEntry, type MemoryPage, type MemoryRecord } from "@assemblyline-agents/core";
import type { StateDatabase } from "../database.js";
import { decodeMemory } from "../rows.js";
import { countOfPaths } from "./path-counts.js";
import { parameters, underPrefix } from "./prefix-range.js";

export async function readMemory(db: StateDatabase, path: string): Promise<MemoryRecord | undefined> {
  const [row] = await db.rows(`readMemory(path "${path}")`, `SELECT path, content, updated_at FROM ${db.s}.memory WHERE path = $1`, [path]);
  return row ? decodeMemory(db.schema, row) : undefined;
}

export async function writeMemory(db: StateDatabase, path: string, content: string): Promise<void> {
  checkMemoryWrite(path, content);
  await db.run(
    `writeMemory(path "${path}")`,
    `INSERT INTO ${db.s}.memory (path, content, updated_at) VALUES ($1, $2, now())
     ON CONFLICT (path) DO UPDATE SET content = EXCLUDED.content, updated_at = EXCLUDED.updated_at`,
    [path, content],
  );
}

/** Paths under `prefix`, in code-point order whatever the database's collation. */
export async function listMemory(db: StateDatabase, prefix = ""): Promise<string[]> {
  const rows = await db.rows<{ path: string }>(
    "listMemory",
    `SELECT path FROM ${db.s}.memory WHERE starts_with(path, $1) ORDER BY path COLLATE "C"`,
    [prefix],
  );
  return rows.map((row) => row.path);
}

/** listMemory with each file's size in UTF-8 bytes, counted by the server. */
export async function listMemoryEntries(db: StateDatabase, prefix = ""): Promise<MemoryEntry[]> {
  const rows = await db.rows<{ path: string; size: number }>(
    "listMemoryEntries",
    `SELECT path, octet_length(content)::int AS size FROM ${db.s}.memory WHERE starts_with(path, $1) ORDER BY path COLLATE "C"`,
    [prefix],
  );
  return rows.map((row) => ({ path: row.path, size: row.size }));
}

/**
 * The first `limit` files under `prefix` with their sizes, and how many there are in all, in one
 * statement: only those rows cross the wire, and the count sums the folders' counter rows
 * (countOfPaths), so neither grows with the files the store holds.
 */
export async function firstMemoryEntries(db: StateDatabase, prefix = "", limit: number): Promise<MemoryPage> {
  checkListLimit(limit, "firstMemoryEntries");
  const values: unknown[] = [limit];
  const under = ["true", ...underPrefix("path", prefix, parameters(values))].join(" AND ");
  const total = countOfPaths(db, "memory", values, prefix);
  const rows = await db.rows<{ path: string | null; size: number | null; total: string }>(
    "firstMemoryEntries",
    `SELECT path, octet_length(content)::int AS size, total
       FROM (SELECT ${total} AS total) AS counted
       LEFT JOIN LATERAL (SELECT path, content FROM ${db.s}.memory WHERE ${under} ORDER BY path COLLATE "C" LIMIT $1) AS first ON true
      ORDER BY path COLLATE "C"`,
    values,
  );
  const entries = rows.flatMap((row) => (row.path === null ? [] : [{ path: row.path, size: row.size! }]));
  return { entries, total: Number(rows[0]?.total ?? 0) };
}

export async function deleteMemory(db: StateDatabase, path: string): Promise<void> {
  await db.run(`deleteMemory(path "${path}")`, `DELETE FROM ${db.s}.memory WHERE path = $1`, [path]);
}
