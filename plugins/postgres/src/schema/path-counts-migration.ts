import type { Migration } from "./migrations.js";

/**
 * Counter rows per folder. A write adds to the row of its connection (its backend's pid, modulo
 * this), so writers on other connections seldom wait for its commit to add to the same folder.
 */
export const PATH_COUNT_SHARDS = 32;

/**
 * A path's folder ends at its `/` of this number at most (its last, with fewer); the counts answer
 * no deeper prefix. Part of migration 6's text, so never changed once released.
 */
export const PATH_FOLDER_DEPTH = 3;

/**
 * How many memory files and file records each folder holds, kept by triggers.
 * The default context says how many files it leaves out of its listing of
 * /memory and /files at every run start, and `count(*)` read every key it
 * counted: 2.8 ms a run start at 20,000 files, 18 ms at 100,000. A count of a
 * folder now sums its counter rows instead (see facets/path-counts.ts).
 *
 * - A path's folder is the path up to and including its third `/` (or its last,
 *   with fewer): `/files/attachments/r1/a.png` counts in `/files/attachments/`,
 *   `notes/a.md` in `notes/`, `a.md` in ``.
 * - Triggers keep the rows, so every write path counts, in the writer's
 *   transaction: inserts and deletes (an upsert's update is neither), a path
 *   changed by UPDATE, and TRUNCATE, which clears the table's rows.
 * - Each table's rows are counted once here, with the tables locked against
 *   writers between the triggers' creation and the count.
 */
export const pathCountsMigration: Migration = {
  version: 6,
  name: "folder counts of memory and files",
  sql: (s) => `
LOCK TABLE ${s}.files, ${s}.memory IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE ${s}.path_counts (
  kind text COLLATE "C" NOT NULL,
  folder text COLLATE "C" NOT NULL,
  shard smallint NOT NULL,
  count bigint NOT NULL,
  PRIMARY KEY (kind, folder, shard)
);

CREATE FUNCTION ${s}.path_folder(path text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $fn$ SELECT substring(path from '^(?:[^/]*/){0,${PATH_FOLDER_DEPTH}}') $fn$;

CREATE FUNCTION ${s}.count_paths() RETURNS trigger
  LANGUAGE plpgsql
  AS $fn$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM ${s}.path_counts WHERE kind = TG_TABLE_NAME;
    RETURN NULL;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    INSERT INTO ${s}.path_counts AS counted (kind, folder, shard, count)
    VALUES (TG_TABLE_NAME, ${s}.path_folder(OLD.path), pg_backend_pid() % ${PATH_COUNT_SHARDS}, -1)
    ON CONFLICT (kind, folder, shard) DO UPDATE SET count = counted.count + EXCLUDED.count;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO ${s}.path_counts AS counted (kind, folder, shard, count)
    VALUES (TG_TABLE_NAME, ${s}.path_folder(NEW.path), pg_backend_pid() % ${PATH_COUNT_SHARDS}, 1)
    ON CONFLICT (kind, folder, shard) DO UPDATE SET count = counted.count + EXCLUDED.count;
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER files_counted AFTER INSERT OR DELETE OR UPDATE OF path ON ${s}.files
  FOR EACH ROW EXECUTE FUNCTION ${s}.count_paths();
CREATE TRIGGER files_cleared AFTER TRUNCATE ON ${s}.files
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.count_paths();
CREATE TRIGGER memory_counted AFTER INSERT OR DELETE OR UPDATE OF path ON ${s}.memory
  FOR EACH ROW EXECUTE FUNCTION ${s}.count_paths();
CREATE TRIGGER memory_cleared AFTER TRUNCATE ON ${s}.memory
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.count_paths();

INSERT INTO ${s}.path_counts (kind, folder, shard, count)
  SELECT 'files', ${s}.path_folder(path), 0, count(*) FROM ${s}.files GROUP BY 2;
INSERT INTO ${s}.path_counts (kind, folder, shard, count)
  SELECT 'memory', ${s}.path_folder(path), 0, count(*) FROM ${s}.memory GROUP BY 2;
`,
};
