import type { StateDatabase } from "../database.js";
import { PATH_FOLDER_DEPTH } from "../schema/path-counts-migration.js";
import { parameters, pastPrefix, underPrefix } from "./prefix-range.js";

/** The tables whose paths the `path_counts` rows count (see schema/path-counts-migration.ts). */
export type CountedTable = "files" | "memory";

const slashes = (text: string): number => text.split("/").length - 1;

/** Whether the paths under `prefix` are exactly those whose folder starts with it: the whole table, or a folder. */
const isFolder = (prefix: string): boolean => prefix === "" || (prefix.endsWith("/") && slashes(prefix) <= PATH_FOLDER_DEPTH);

/**
 * An SQL expression (bigint) for how many paths of `table` start with `prefix`, and not with
 * `excludePrefix` when given; its values are appended to `values` and named as `$n`.
 *
 * A folder's count sums its counter rows, whatever the number of paths in it; a prefix that ends
 * inside a name of the first levels (`/files`) is that folder (`/files/`) and two ranges of the
 * primary key beside it (`/files.txt`, `/files-old/...`: empty as a rule beside a root such as
 * `/files`); a deeper prefix counts its rows in the primary key.
 */
export function countOfPaths(db: StateDatabase, table: CountedTable, values: unknown[], prefix: string, excludePrefix?: string): string {
  // Everything listed is excluded, or the two sets are apart, or the excluded one lies inside.
  if (excludePrefix !== undefined && prefix.startsWith(excludePrefix)) return "0::bigint";
  const under = countUnder(db, table, values, prefix);
  if (excludePrefix === undefined || !excludePrefix.startsWith(prefix)) return under;
  return `(${under} - ${countUnder(db, table, values, excludePrefix)})`;
}

function countUnder(db: StateDatabase, table: CountedTable, values: unknown[], prefix: string): string {
  const parameter = parameters(values);
  const where = (conditions: string[]) => (conditions.length === 0 ? "" : ` AND ${conditions.join(" AND ")}`);
  const folders = (folder: string) =>
    `(SELECT coalesce(sum(count), 0)::bigint FROM ${db.s}.path_counts WHERE kind = '${table}'${where(underPrefix("folder", folder, parameter))})`;
  const rows = (conditions: string[]) => `(SELECT count(*) FROM ${db.s}.${table} WHERE true${where(conditions)})`;
  if (isFolder(prefix)) return folders(prefix);
  const past = pastPrefix(prefix);
  if (past === undefined || slashes(prefix) >= PATH_FOLDER_DEPTH) return rows(underPrefix("path", prefix, parameter));
  // "/" + 1 is "0": the two ranges hold what starts with the prefix and not with prefix + "/".
  const beside = (from: string, to: string) => rows([`path >= ${parameter(from)}`, `path < ${parameter(to)}`]);
  return `(${folders(`${prefix}/`)} + ${beside(prefix, `${prefix}/`)} + ${beside(`${prefix}0`, past)})`;
}
