import type { Migration } from "./migrations.js";

/**
 * The skills facet: one row per skill folder of an agent. Writes are
 * compare-and-set on `digest` (a conditional INSERT/UPDATE/DELETE, one
 * statement each), so racing writers cannot lose each other's changes.
 */
export const skillsMigration: Migration = {
  version: 2,
  name: "skill store",
  sql: (s) => `
CREATE TABLE ${s}.skills (
  agent_id text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  files json NOT NULL,
  digest text NOT NULL,
  seed_digest text,
  seed_revision text,
  changed_by text NOT NULL,
  conflict json,
  updated_at text NOT NULL,
  PRIMARY KEY (agent_id, name)
);
`,
};
