import type { UsageRecord } from "@assemblyline-agents/core";
import type { StateDatabase } from "../database.js";
import { decodeUsage } from "../rows.js";
import { ArgumentCheck } from "../validate.js";

const USAGE_COLUMNS =
  "id, run_id, conversation_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, created_at";

/** Recording the same id twice counts once. */
export async function recordUsage(db: StateDatabase, record: UsageRecord): Promise<void> {
  const check = new ArgumentCheck("recordUsage");
  check.object("record", record);
  const id = check.string("record.id", record.id);
  await db.run(
    `recordUsage(usage "${id}")`,
    `INSERT INTO ${db.s}.usage (${USAGE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (id) DO NOTHING`,
    [
      id,
      check.text("record.runId", record.runId),
      check.nullableString("record.conversationId", record.conversationId),
      check.text("record.provider", record.provider),
      check.text("record.model", record.model),
      check.number("record.inputTokens", record.inputTokens),
      check.number("record.outputTokens", record.outputTokens),
      check.number("record.cacheReadTokens", record.cacheReadTokens),
      check.number("record.cacheWriteTokens", record.cacheWriteTokens),
      check.number("record.costUsd", record.costUsd),
      check.text("record.createdAt", record.createdAt),
    ],
  );
}

/** In recording order. */
export async function listUsage(db: StateDatabase, filter: { runId?: string; conversationId?: string } = {}): Promise<UsageRecord[]> {
  const rows = await db.rows(
    "listUsage",
    `SELECT ${USAGE_COLUMNS} FROM ${db.s}.usage
     WHERE ($1::text IS NULL OR run_id = $1) AND ($2::text IS NULL OR conversation_id = $2)
     ORDER BY position`,
    [filter?.runId ?? null, filter?.conversationId ?? null],
  );
  return rows.map((row) => decodeUsage(db.schema, row));
}
