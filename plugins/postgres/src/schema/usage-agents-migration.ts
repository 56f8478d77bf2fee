import type { Migration } from "./migrations.js";

/**
 * Whose model call each usage record is. Several agents may share one database and serve the same
 * conversation id (one chat channel): a conversation's daily budgets list with `agentId` and count
 * only that agent's calls, its subagents' included, and those without an agent.
 *
 * - Existing rows take the agent of their run (`run_id`), so the spending recorded before this
 *   still counts against the agent that spent it. A row whose run is gone keeps NULL: legacy,
 *   counted by every agent, as before.
 * - `usage_by_conversation_agent` serves a conversation's listing for an agent: one range for the
 *   agent's rows, one under `<agent id>/` for its subagents', one for the NULL ones. The index by
 *   conversation stays for listings without an agent.
 */
export const usageAgentsMigration: Migration = {
  version: 10,
  name: "usage by agent",
  sql: (s) => `
ALTER TABLE ${s}.usage ADD COLUMN agent_id text COLLATE "C";

UPDATE ${s}.usage AS u SET agent_id = r.agent_id
FROM ${s}.runs AS r
WHERE r.id = u.run_id;

CREATE INDEX usage_by_conversation_agent ON ${s}.usage (conversation_id, agent_id, position);
`,
};
