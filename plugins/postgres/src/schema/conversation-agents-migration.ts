import type { Migration } from "./migrations.js";

/**
 * Whose history each conversation message is. Several agents may share one database and serve
 * the same conversation id (one chat channel): a listing with `agentId` reads only that agent's
 * messages and those without an agent.
 *
 * - Existing rows take the agent of their run (`run_id`), so a history written before this stays
 *   with the agent that wrote it. A row with no run, or whose run is gone, keeps NULL: legacy, listed
 *   to every agent, as before.
 * - `conversation_messages_by_agent` serves the agent's listing: one backward range scan for the
 *   agent's rows and one for the NULL ones, merged by position, each stopping at the limit. The
 *   index by conversation stays for listings without an agent.
 */
export const conversationAgentsMigration: Migration = {
  version: 7,
  name: "conversation messages by agent",
  sql: (s) => `
ALTER TABLE ${s}.conversation_messages ADD COLUMN agent_id text COLLATE "C";

UPDATE ${s}.conversation_messages AS m SET agent_id = r.agent_id
FROM ${s}.runs AS r
WHERE r.id = m.run_id;

CREATE INDEX conversation_messages_by_agent ON ${s}.conversation_messages (conversation_id, agent_id, position);
`,
};
