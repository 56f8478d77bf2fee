import type { FileListOptions, FileRecord } from "@assemblyline-agents/core";
import type { StateDatabase } from "../database.js";
import { decodeFile } from "../rows.js";
import { ArgumentCheck } from "../validate.js";

const FILE_COLUMNS = "path, blob_key, size, content_type, sha256, run_id, created_at";

export async function putFileRecord(db: StateDatabase, record: FileRecord): Promise<void> {
  const check = new ArgumentCheck("putFileRecord");
  check.object("record", record);
  const path = check.string("record.path", record.path);
  await db.run(
    `putFileRecord(path "${path}")`,
    `INSERT INTO ${db.s}.files (${FILE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (path) DO UPDATE SET
       blob_key = EXCLUDED.blob_key, size = EXCLUDED.size, content_type = EXCLUDED.content_type,
       sha256 = EXCLUDED.sha256, run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at`,
    [
      path,
      check.text("record.blobKey", record.blobKey),
      Math.round(check.nonNegative("record.size", record.size)),
      check.text("record.contentType", record.contentType),
      check.text("record.sha256", record.sha256),
      check.nullableString("record.runId", record.runId),
      check.text("record.createdAt", record.createdAt),
    ],
  );
}

export async function getFileRecord(db: StateDatabase, path: string): Promise<FileRecord | undefined> {
  const [row] = await db.rows(`getFileRecord(path "${path}")`, `SELECT ${FILE_COLUMNS} FROM ${db.s}.files WHERE path = $1`, [path]);
  return row ? decodeFile(db.schema, row) : undefined;
}

/** Sorted by path in code-point order, whatever the database's collation. */
export async function listFileRecords(db: StateDatabase, options: FileListOptions = {}): Promise<FileRecord[]> {
  const rows = await db.rows(
    "listFileRecords",
    `SELECT ${FILE_COLUMNS} FROM ${db.s}.files WHERE starts_with(path, $1) AND ($2::text IS NULL OR NOT starts_with(path, $2)) ORDER BY path COLLATE "C"`,
    [options.prefix ?? "", options.excludePrefix ?? null],
  );
  return rows.map((row) => decodeFile(db.schema, row));
}

export async function deleteFileRecord(db: StateDatabase, path: string): Promise<void> {
  await db.run(`deleteFileRecord(path "${path}")`, `DELETE FROM ${db.s}.files WHERE path = $1`, [path]);
}
