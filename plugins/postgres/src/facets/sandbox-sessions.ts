import type { SandboxSessionRecord } from "@assemblyline-agents/core";
import { jsonParam, type StateDatabase } from "../database.js";
import { decodeSandboxSession } from "../rows.js";
import { ArgumentCheck } from "../validate.js";

const SESSION_COLUMNS = "key, adapter, session_id, data, created_at, updated_at";

export async function getSandboxSession(db: StateDatabase, key: string): Promise<SandboxSessionRecord | undefined> {
  const [row] = await db.rows(
    `getSandboxSession(key "${key}")`,
    `SELECT ${SESSION_COLUMNS} FROM ${db.s}.sandbox_sessions WHERE key = $1`,
    [key],
  );
  return row ? decodeSandboxSession(db.schema, row) : undefined;
}

export async function putSandboxSession(db: StateDatabase, record: SandboxSessionRecord): Promise<void> {
  const check = new ArgumentCheck("putSandboxSession");
  check.object("record", record);
  const key = check.string("record.key", record.key);
  if (record.data === undefined) check.fail("record.data", "a JSON value (null for none)", record.data);
  await db.run(
    `putSandboxSession(key "${key}")`,
    `INSERT INTO ${db.s}.sandbox_sessions (${SESSION_COLUMNS}) VALUES ($1, $2, $3, $4::json, $5, $6)
     ON CONFLICT (key) DO UPDATE SET
       adapter = EXCLUDED.adapter, session_id = EXCLUDED.session_id, data = EXCLUDED.data,
       created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`,
    [
      key,
      check.text("record.adapter", record.adapter),
      check.text("record.sessionId", record.sessionId),
      jsonParam(record.data, check.operation, "record.data"),
      check.text("record.createdAt", record.createdAt),
      check.text("record.updatedAt", record.updatedAt),
    ],
  );
}

export async function deleteSandboxSession(db: StateDatabase, key: string): Promise<void> {
  await db.run(`deleteSandboxSession(key "${key}")`, `DELETE FROM ${db.s}.sandbox_sessions WHERE key = $1`, [key]);
}

export async function listSandboxSessions(db: StateDatabase): Promise<SandboxSessionRecord[]> {
  const rows = await db.rows("listSandboxSessions", `SELECT ${SESSION_COLUMNS} FROM ${db.s}.sandbox_sessions ORDER BY key COLLATE "C"`);
  return rows.map((row) => decodeSandboxSession(db.schema, row));
}
