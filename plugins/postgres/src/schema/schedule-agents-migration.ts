import type { Migration } from "./migrations.js";

/**
 * Whose scheduler dispatches each schedule. Several agents may share one database: a claim with
 * `agentId` takes only that agent's rows and those of no agent.
 *
 * - Existing automation rows take the agent their payload names (`payload.agentId`, written by
 *   every version), so they stay with the agent that wrote them. Other rows keep NULL: any agent's
 *   scheduler may claim them, as before.
 * - No new index: the claim walks `schedules_due` (due, enabled rows) and tests the agent there.
 */
export const scheduleAgentsMigration: Migration = {
  version: 8,
  name: "schedules by agent",
  sql: (s) => `
ALTER TABLE ${s}.schedules ADD COLUMN agent_id text COLLATE "C";

UPDATE ${s}.schedules SET agent_id = payload->>'agentId'
WHERE json_typeof(payload) = 'object' AND payload->>'kind' = 'automation'
  AND json_typeof(payload->'agentId') = 'string' AND payload->>'agentId' <> '';
`,
};
