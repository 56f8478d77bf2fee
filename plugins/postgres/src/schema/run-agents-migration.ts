import type { Migration } from "./migrations.js";

/**
 * Whose unfinished runs a recovery claim reads. Several agents may share one database: a claim
 * with `agentId` walked `runs_recoverable` (every agent's queued and running runs, oldest first)
 * and skipped the other agents' it met, so another agent's backlog (its hosts gone, its mailbox's
 * runs queued) cost every claim of this one a walk over all of it. `runs_recoverable_by_agent`
 * holds the same rows keyed by the agent id before any `/` (a subagent's runs beside its root
 * agent's), so a claim reads only its agent's, oldest first, in any plan.
 *
 * It replaces `runs_recoverable` rather than joining it: a run's status writes update as many
 * indexes as before. A claim without an agent sorts the unfinished runs by position instead of
 * reading them in order; the runtime always names its agent.
 */
export const runAgentsMigration: Migration = {
  version: 11,
  name: "recoverable runs by agent",
  sql: (s) => `
CREATE INDEX runs_recoverable_by_agent ON ${s}.runs (split_part(agent_id, '/', 1), position) WHERE status IN ('queued', 'running');
DROP INDEX ${s}.runs_recoverable;
`,
};
