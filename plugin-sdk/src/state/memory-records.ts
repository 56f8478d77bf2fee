import type { MemoryEntry, MemoryPage, MemoryRecord } from "./facets.js";
import { checkListLimit } from "./list-limit.js";
import { RecordsByPath } from "./records-by-path.js";

/**
 * The memory files of a state store that keeps them in memory, by path (sorted, see RecordsByPath),
 * each with its size in UTF-8 bytes measured when written: the default context lists the sizes of
 * /memory every time it is built, and measuring every file's content at each listing read all of
 * the agent's memory once per run start.
 */
export class MemoryRecordsByPath extends RecordsByPath<MemoryRecord> {
  private readonly sizes = new Map<string, number>();

  override set(path: string, record: MemoryRecord): this {
    this.sizes.set(path, Buffer.byteLength(record.content, "utf8"));
    return super.set(path, record);
  }

  override delete(path: string): boolean {
    this.sizes.delete(path);
    return super.delete(path);
  }

  /** The paths under `prefix` and their sizes, sorted by path; at most `limit` of them. */
  entries(prefix = "", limit?: number): MemoryEntry[] {
    return this.listPaths({ prefix, ...(limit === undefined ? {} : { limit }) }).map((path) => ({ path, size: this.sizes.get(path)! }));
  }

  /**
   * The first `limit` entries under `prefix`, and how many there are in all (see MemoryStateStore.firstMemoryEntries).
   * A limit that is not a whole number is refused in an error naming `caller`, as `RecordsByPath.page` does.
   */
  first(prefix: string, limit: number, caller = "MemoryRecordsByPath.first"): MemoryPage {
    checkListLimit(limit, caller);
    return { entries: this.entries(prefix, limit), total: this.countUnder(prefix) };
  }
}
