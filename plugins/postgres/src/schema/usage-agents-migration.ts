import type { Migration } from "./migrations.js";

/**
 * Whose model call each usage record is. Several agents may share one database and serve the same
 * conversation id (one chat channel): a conversation's daily budgets list with `agentId` and count
 * only that agent's calls, its subagents' included, and those without an agent.
 *
 * - Existing rows of a conversation recorded since yesterday (UTC) take the agent of their run
 *   (`run_id`), so the spending of the day the upgrade happens still counts against the agent
 *   that spent it. Older rows keep NULL, as does a row whose run is gone: legacy, counted by every
 *   agent, as before. Only today's calls count toward a daily budget, so a long history of usage
 *   is not rewritten.
 * - `usage_by_conversation_agent` serves a conversation's listing for an agent, from `since` (a
 *   daily budget's: the day's records, compared as text byte for byte) when given: one range for the
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
WHERE r.id = u.run_id AND u.conversation_id IS NOT NULL
  AND u.created_at >= to_char((now() AT TIME ZONE 'UTC') - interval '1 day', 'YYYY-MM-DD');

CREATE INDEX usage_by_conversation_agent ON ${s}.usage (conversation_id, agent_id, created_at COLLATE "C");
`,
};
