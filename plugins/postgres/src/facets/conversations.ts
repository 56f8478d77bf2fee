import type { ConversationMessage } from "@assemblyline-agents/core";
import type { StateDatabase } from "../database.js";
import { decodeMessage } from "../rows.js";
import { ArgumentCheck } from "../validate.js";

const ROLES = ["user", "assistant"] as const;

export async function appendConversationMessages(db: StateDatabase, conversationId: string, messages: ConversationMessage[]): Promise<void> {
  const check = new ArgumentCheck(`appendConversationMessages(conversation "${conversationId}")`);
  check.string("conversationId", conversationId);
  if (!Array.isArray(messages)) check.fail("messages", "an array", messages);
  if (messages.length === 0) return;
  const roles: string[] = [];
  const contents: string[] = [];
  const runIds: (string | null)[] = [];
  const times: string[] = [];
  messages.forEach((message, i) => {
    check.object(`messages[${i}]`, message);
    roles.push(check.oneOf(`messages[${i}].role`, message.role, ROLES));
    contents.push(check.text(`messages[${i}].content`, message.content));
    runIds.push(check.nullableString(`messages[${i}].runId`, message.runId));
    times.push(message.createdAt === undefined ? new Date().toISOString() : check.text(`messages[${i}].createdAt`, message.createdAt));
  });
  // One statement for the batch; identity values follow the ORDER BY, which keeps the given order.
  await db.run(
    check.operation,
    `INSERT INTO ${db.s}.conversation_messages (conversation_id, role, content, run_id, created_at)
     SELECT $1, m.role, m.content, m.run_id, m.created_at
     FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS m(role, content, run_id, created_at, ord)
     ORDER BY m.ord`,
    [conversationId, roles, contents, runIds, times],
  );
}

export async function listConversationMessages(
  db: StateDatabase,
  conversationId: string,
  options: { limit?: number } = {},
): Promise<ConversationMessage[]> {
  const operation = `listConversationMessages(conversation "${conversationId}")`;
  const limit = options.limit === undefined ? null : Math.floor(options.limit);
  if (limit !== null && limit <= 0) return [];
  // The last `limit` messages, returned oldest first.
  const rows = await db.rows(
    operation,
    `SELECT * FROM (
       SELECT position, conversation_id, role, content, run_id, created_at
       FROM ${db.s}.conversation_messages WHERE conversation_id = $1
       ORDER BY position DESC LIMIT $2
     ) tail ORDER BY position`,
    [conversationId, limit],
  );
  return rows.map((row) => decodeMessage(db.schema, row));
}
