import type { FileListOptions, FileRecord } from "./facets.js";
import { partitionPoint } from "./partition-point.js";

/**
 * The file records of a state store that keeps them in memory, also held as a sorted list of their
 * paths, so that a listing under a prefix reads the records under it, not every record the store
 * holds. The default context lists /files every time it is built (its manifest and this run's
 * attachments), and every attachment a host ever took in has a record there: filtering, copying
 * and sorting them all cost 72 ms a call at 100,000 attachments.
 */
export class FileRecordsByPath {
  private readonly records = new Map<string, FileRecord>();
  private readonly paths: string[] = [];

  get size(): number {
    return this.records.size;
  }

  has(path: string): boolean {
    return this.records.has(path);
  }

  get(path: string): FileRecord | undefined {
    return this.records.get(path);
  }

  /** Hold `record` under `path` (its own path), replacing any record held there. */
  set(path: string, record: FileRecord): this {
    if (!this.records.has(path)) this.paths.splice(firstAtOrAfter(this.paths, path), 0, path);
    this.records.set(path, record);
    return this;
  }

  delete(path: string): boolean {
    if (!this.records.delete(path)) return false;
    this.paths.splice(firstAtOrAfter(this.paths, path), 1);
    return true;
  }

  /** Every record, in the order first held. */
  values(): IterableIterator<FileRecord> {
    return this.records.values();
  }

  /** The records whose path starts with `prefix` and not with `excludePrefix`, sorted by path. */
  list(options: FileListOptions = {}): FileRecord[] {
    const prefix = options.prefix ?? "";
    const { excludePrefix } = options;
    const found: FileRecord[] = [];
    let index = firstAtOrAfter(this.paths, prefix);
    while (index < this.paths.length && this.paths[index]!.startsWith(prefix)) {
      const path = this.paths[index]!;
      if (excludePrefix !== undefined && path.startsWith(excludePrefix)) {
        // The paths under excludePrefix sort together: step over all of them at once.
        index = firstNotUnder(this.paths, excludePrefix, index);
        continue;
      }
      found.push(this.records.get(path)!);
      index += 1;
    }
    return found;
  }
}

/** The index of the first path not below `path` in sorted `paths`. */
function firstAtOrAfter(paths: readonly string[], path: string): number {
  return partitionPoint(paths, (other) => other < path);
}

/** From `start`, a path under `prefix`, the index of the first path that is not under it. */
function firstNotUnder(paths: readonly string[], prefix: string, start: number): number {
  return partitionPoint(paths, (other) => other.startsWith(prefix), start);
}
