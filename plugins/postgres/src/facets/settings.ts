import { checkListLimit, checkSettingWrite, type JsonValue, type SettingAuditEvent } from "@assemblyline-agents/core";
import { randomUUID } from "node:crypto";
import { jsonParam, type StateDatabase } from "../database.js";
import { decodeSettingAudit } from "../rows.js";

export async function getSetting(db: StateDatabase, key: string): Promise<JsonValue | undefined> {
  const [row] = await db.rows<{ value: JsonValue | null }>(`getSetting(key "${key}")`, `SELECT value FROM ${db.s}.settings WHERE key = $1`, [key]);
  return row ? (row.value ?? null) : undefined;
}

/** The value and its audit event in one round trip (the `put_setting` SQL function). */
export async function putSetting(
  db: StateDatabase,
  key: string,
  value: JsonValue,
  audit: { actor: string; reason?: string },
): Promise<SettingAuditEvent> {
  const operation = `putSetting(key "${key}")`;
  checkSettingWrite(operation, key, value, audit);
  const { actor } = audit;
  const reason = audit.reason ?? null;
  const valueJson = jsonParam(value, operation, "value") ?? "null";
  const id = randomUUID();
  const [row] = await db.rows<{ previous: JsonValue | null; created_at: Date }>(
    operation,
    `SELECT previous, created_at FROM ${db.s}.put_setting($1, $2::json, $3, $4, $5)`,
    [key, valueJson, id, actor, reason],
  );
  return {
    id,
    key,
    value: JSON.parse(valueJson) as JsonValue,
    previous: row?.previous ?? null,
    actor,
    reason,
    createdAt: (row?.created_at ?? new Date()).toISOString(),
  };
}

/** Newest first. */
export async function listSettingAudit(db: StateDatabase, options: { key?: string; limit?: number } = {}): Promise<SettingAuditEvent[]> {
  if (options.limit !== undefined) checkListLimit(options.limit, "listSettingAudit");
  const rows = await db.rows(
    "listSettingAudit",
    `SELECT id, key, value, previous, actor, reason, created_at FROM ${db.s}.setting_audit
     WHERE ($1::text IS NULL OR key = $1)
     ORDER BY position DESC
     LIMIT $2`,
    [options.key ?? null, options.limit ?? null],
  );
  return rows.map((row) => decodeSettingAudit(db.schema, row));
}
