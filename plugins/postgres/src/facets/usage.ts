import { checkedUsageRecord, type UsageFilter, type UsageRecord } from "@assemblyline-agents/core";
import type { StateDatabase } from "../database.js";
import { decodeUsage } from "../rows.js";
import { ArgumentCheck } from "../validate.js";
import { parameters } from "./prefix-range.js";
import { runOfAgent } from "./runs.js";

const USAGE_COLUMNS =
  "id, run_id, conversation_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, created_at, agent_id";

/**
 * Recording the same id twice counts once. `createdAt` is stored as an ISO UTC time
 * (`...T07:00:00.000Z` for `...T12:00:00+05:00`), so the text order of the column is the time
 * order listUsage's `since` needs; a `createdAt` that is no time is refused. Rows recorded before
 * this kept `createdAt` as given: the runtime has always written ISO UTC times, so only another
 * writer's times with an offset compare as text.
 */
export async function recordUsage(db: StateDatabase, record: UsageRecord): Promise<void> {
  const checked = checkedUsageRecord("recordUsage", record);
  const { id } = checked;
  await db.run(
    `recordUsage(usage "${id}")`,
    `INSERT INTO ${db.s}.usage (${USAGE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     ON CONFLICT (id) DO NOTHING`,
    [
      id,
      checked.runId,
      checked.conversationId ?? null,
      checked.provider,
      checked.model,
      checked.inputTokens,
      checked.outputTokens,
      checked.cacheReadTokens,
      checked.cacheWriteTokens,
      checked.costUsd,
      // An ISO UTC time (checkedUsageRecord), the form the runtime writes: listUsage's `since` compares it as text.
      checked.createdAt,
      checked.agentId ?? null,
    ],
  );
}

/** In recording order. */
export async function listUsage(db: StateDatabase, filter: UsageFilter = {}): Promise<UsageRecord[]> {
  const check = new ArgumentCheck("listUsage");
  const agentId = filter?.agentId === undefined ? undefined : check.string("filter.agentId", filter.agentId);
  // Read as a time and written back in the form the runtime records, so the text comparison holds.
  const since = filter?.since === undefined ? undefined : check.time("filter.since", filter.since);
  const { text, values } = listStatement(db.s, { runId: filter?.runId, conversationId: filter?.conversationId, agentId, since });
  const rows = await db.rows("listUsage", text, values);
  return rows.map((row) => decodeUsage(db.schema, row));
}

/**
 * The listing's statement on schema `s` (quoted), and its values: one text per set of fields given,
 * so each is planned with its own conditions (an `$1 IS NULL OR` for a field left out kept a generic
 * plan from the indexes). With an agent, its rows and its subagents' (the id, or the range under
 * `<agentId>/`, as isRunOfAgent decides) and those without one: for a conversation's listing, three
 * ranges of usage_by_conversation_agent, so the conversation's other agents' rows are never read.
 * Exported for the test that reads its plan.
 */
export function listStatement(s: string, filter: UsageFilter): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const parameter = parameters(values);
  const conditions: string[] = [];
  if (filter.runId !== undefined) conditions.push(`run_id = ${parameter(filter.runId)}`);
  if (filter.conversationId !== undefined) conditions.push(`conversation_id = ${parameter(filter.conversationId)}`);
  if (filter.agentId !== undefined) conditions.push(`(agent_id IS NULL OR ${runOfAgent("agent_id", filter.agentId, parameter)})`);
  // Byte-wise, as the records' text compares (usage_by_conversation_agent holds it so): both are ISO UTC times.
  if (filter.since !== undefined) conditions.push(`created_at COLLATE "C" >= ${parameter(filter.since)}`);
  const where = conditions.length === 0 ? "" : `WHERE ${conditions.join(" AND ")}`;
  return { text: `SELECT ${USAGE_COLUMNS} FROM ${s}.usage ${where} ORDER BY position`, values };
}
