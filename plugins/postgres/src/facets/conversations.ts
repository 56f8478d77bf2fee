import { checkConversationAppend, checkListLimit, type ConversationMessage, type ConversationScope } from "@assemblyline-agents/core";
import type { StateDatabase } from "../database.js";
import { decodeMessage } from "../rows.js";
import { ArgumentCheck } from "../validate.js";

export async function appendConversationMessages(
  db: StateDatabase,
  conversationId: string,
  messages: ConversationMessage[],
  options: ConversationScope = {},
): Promise<void> {
  const operation = `appendConversationMessages(conversation "${conversationId}")`;
  checkConversationAppend(operation, conversationId, messages, options);
  const agentId = options.agentId ?? null;
  if (messages.length === 0) return;
  const roles = messages.map((message) => message.role);
  const contents = messages.map((message) => message.content);
  const runIds = messages.map((message) => message.runId ?? null);
  const times = messages.map((message) => message.createdAt ?? new Date().toISOString());
  // One statement for the batch; identity values follow the ORDER BY, which keeps the given order.
  await db.run(
    operation,
    `INSERT INTO ${db.s}.conversation_messages (conversation_id, agent_id, role, content, run_id, created_at)
     SELECT $1, $6::text, m.role, m.content, m.run_id, m.created_at
     FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS m(role, content, run_id, created_at, ord)
     ORDER BY m.ord`,
    [conversationId, roles, contents, runIds, times, agentId],
  );
}

export async function listConversationMessages(
  db: StateDatabase,
  conversationId: string,
  options: { limit?: number } & ConversationScope = {},
): Promise<ConversationMessage[]> {
  const check = new ArgumentCheck(`listConversationMessages(conversation "${conversationId}")`);
  const agentId = options.agentId === undefined ? undefined : check.string("options.agentId", options.agentId);
  const limit = options.limit ?? null;
  if (limit !== null) checkListLimit(limit, check.operation);
  if (limit === 0) return [];
  const rows =
    agentId === undefined
      ? await db.rows(check.operation, listStatement(db.s, false), [conversationId, limit])
      : await db.rows(check.operation, listStatement(db.s, true), [conversationId, limit, agentId]);
  return rows.map((row) => decodeMessage(db.schema, row));
}

/**
 * The listing: the last `$2` messages of conversation `$1` (all with `$2` null), oldest first. With
 * an agent (`$3`): its last rows and the last ones without an agent, each a backward range of
 * conversation_messages_by_agent, then the last `$2` of both (an OR of the two would read the
 * conversation's other agents' rows too).
 *
 * Each range is ordered by `agent_id` too, an order only that index gives, and the agent's is
 * matched as `>= $3 AND <= $3` (equal in the "C" collation) because `= $3` would let the planner drop
 * that key from the order: ordered by position alone, it walked the primary key backward through
 * every newer row, expecting the agent's rows (or the few legacy ones) spread among them rather than
 * before them all (25,000 rows read for 20). Exported for the test that reads its plan.
 */
export function listStatement(s: string, byAgent: boolean): string {
  const columns = "position, conversation_id, agent_id, role, content, run_id, created_at";
  if (!byAgent) {
    return `SELECT * FROM (
       SELECT ${columns} FROM ${s}.conversation_messages WHERE conversation_id = $1
       ORDER BY position DESC LIMIT $2
     ) tail ORDER BY position`;
  }
  return `SELECT * FROM (
     (SELECT ${columns} FROM ${s}.conversation_messages
      WHERE conversation_id = $1 AND agent_id >= $3 AND agent_id <= $3 ORDER BY agent_id DESC, position DESC LIMIT $2)
     UNION ALL
     (SELECT ${columns} FROM ${s}.conversation_messages
      WHERE conversation_id = $1 AND agent_id IS NULL ORDER BY agent_id DESC, position DESC LIMIT $2)
     ORDER BY position DESC LIMIT $2
   ) tail ORDER BY position`;
}
