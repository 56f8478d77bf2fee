import type { Migration } from "./migrations.js";

/**
 * The unfinished runs of a conversation, newest first. Before it drives a queued turn of a
 * conversation, `runtime.start` lists the conversation's queued and running runs (a conversation's
 * turns run one at a time, in the order they were stored); through `runs_by_conversation` that read
 * walked every turn the conversation ever had, finished ones included: 4-5 ms a start beside 10,000
 * of them. This index holds only the unfinished runs of conversations, so the read takes those few.
 * A run without a conversation is not in it: its writes update no more indexes than before.
 */
export const unfinishedRunsMigration: Migration = {
  version: 14,
  name: "unfinished runs by conversation",
  sql: (s) => `
CREATE INDEX runs_unfinished_by_conversation ON ${s}.runs (conversation_id, position) WHERE status IN ('queued', 'running') AND conversation_id IS NOT NULL;
`,
};
