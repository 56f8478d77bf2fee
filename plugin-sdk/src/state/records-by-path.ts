import { OrderedSet, type OrderedSetIterator } from "js-sdsl";
import { codePointKey, fromCodePointKey } from "./code-point-order.js";
import { checkListLimit } from "./list-limit.js";

/** Which records a listing by path takes. */
export interface PathListOptions {
  /** Only the records whose path starts with this; all of them when left out. */
  prefix?: string;
  /** Leave out the records whose path starts with this. */
  excludePrefix?: string;
  /** At most this many, the first by path; all of them when left out. */
  limit?: number;
}

/**
 * Records keyed by path, for a state store that keeps them in memory (file records, memory files),
 * also held as a sorted set of their paths, so that a listing under a prefix reads the records
 * under it, not every record the store holds, and sorts nothing. The default context lists /files
 * and /memory every time it is built: filtering, copying and sorting every attachment record cost
 * 72 ms a call at 100,000 attachments, and every memory file 25 ms at 20,000.
 *
 * The paths are a balanced tree that knows each path's rank (js-sdsl's OrderedSet with its index),
 * not a sorted array: inserting into an array moves every path after the new one, 0.24 ms a new
 * file at 100,000 paths, and a file state folder holding 100,000 attachments took 6.1 s to open. In
 * the tree a new path costs a few microseconds, and a count under a prefix is the difference of two ranks.
 * Listings are in code-point order, as in every state store: the tree holds each path's codePointKey.
 */
export class RecordsByPath<R> {
  private readonly records = new Map<string, R>();
  /** The paths' keys (see codePointKey), sorted. */
  private readonly keys = new OrderedSet<string>([], byCodeUnit, true);

  get size(): number {
    return this.records.size;
  }

  has(path: string): boolean {
    return this.records.has(path);
  }

  get(path: string): R | undefined {
    return this.records.get(path);
  }

  /** Hold `record` under `path` (its own path), replacing any record held there. */
  set(path: string, record: R): this {
    if (!this.records.has(path)) this.keys.insert(codePointKey(path));
    this.records.set(path, record);
    return this;
  }

  delete(path: string): boolean {
    if (!this.records.delete(path)) return false;
    this.keys.eraseElementByKey(codePointKey(path));
    return true;
  }

  /** Every record, in the order first held. */
  values(): IterableIterator<R> {
    return this.records.values();
  }

  /** The paths that start with `prefix` and not with `excludePrefix`, sorted. */
  listPaths(options: PathListOptions = {}): string[] {
    const prefix = codePointKey(options.prefix ?? "");
    const excludePrefix = options.excludePrefix === undefined ? undefined : codePointKey(options.excludePrefix);
    const { limit = Number.POSITIVE_INFINITY } = options;
    const found: string[] = [];
    const end = this.keys.end();
    let at = this.keys.lowerBound(prefix);
    while (found.length < limit && !at.equals(end) && at.pointer.startsWith(prefix)) {
      const key = at.pointer;
      if (excludePrefix !== undefined && key.startsWith(excludePrefix)) {
        // The paths under excludePrefix sort together: step over all of them at once.
        at = this.firstNotUnder(excludePrefix);
        continue;
      }
      found.push(fromCodePointKey(key));
      at.next();
    }
    return found;
  }

  /** How many paths start with `prefix`: two ranks in the tree, however many paths there are. */
  countUnder(prefix: string): number {
    const key = codePointKey(prefix);
    return this.rank(this.firstNotUnder(key)) - this.rank(this.keys.lowerBound(key));
  }

  /** How many paths `listPaths(options)` gives, without listing them: a few searches of the tree. */
  count(options: Omit<PathListOptions, "limit"> = {}): number {
    const prefix = options.prefix ?? "";
    const { excludePrefix } = options;
    const under = this.countUnder(prefix);
    if (excludePrefix === undefined) return under;
    // Either prefix is within the other's range, or the two ranges are apart.
    if (excludePrefix.startsWith(prefix)) return under - this.countUnder(excludePrefix);
    return prefix.startsWith(excludePrefix) ? 0 : under;
  }

  /**
   * The first `limit` records of `list(options)` and how many it has in all (see FileIndexStore.firstFileRecords).
   * A limit that is not a whole number is refused in an error naming `caller`: the method the caller was given it to.
   */
  page(options: Omit<PathListOptions, "limit">, limit: number, caller = "RecordsByPath.page"): { records: R[]; total: number } {
    checkListLimit(limit, caller);
    return { records: this.list({ ...options, limit }), total: this.count(options) };
  }

  /** The records whose path starts with `prefix` and not with `excludePrefix`, sorted by path. */
  list(options: PathListOptions = {}): R[] {
    return this.listPaths(options).map((path) => this.records.get(path)!);
  }

  /** How many keys sort before `at`; js-sdsl gives the end's index as the last key's, so the end is counted here. */
  private rank(at: OrderedSetIterator<string>): number {
    return at.equals(this.keys.end()) ? this.keys.size() : at.index;
  }

  /** The first key that sorts after every key starting with `prefixKey` (the end when none does). */
  private firstNotUnder(prefixKey: string): OrderedSetIterator<string> {
    const past = pastPrefix(prefixKey);
    return past === undefined ? this.keys.end() : this.keys.lowerBound(past);
  }
}

/** JavaScript's own order of strings (UTF-16 code units), which `<` gives: the keys' order. */
const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The least string above every string that starts with `prefix`, in UTF-16 code-unit order: the
 * prefix with its last code unit raised by one, once any trailing U+FFFF (the highest unit, which
 * cannot be raised) is dropped. Undefined when nothing is above them all (an empty prefix, or U+FFFF only).
 */
function pastPrefix(prefix: string): string | undefined {
  let end = prefix.length;
  while (end > 0 && prefix.charCodeAt(end - 1) === 0xffff) end -= 1;
  if (end === 0) return undefined;
  return prefix.slice(0, end - 1) + String.fromCharCode(prefix.charCodeAt(end - 1) + 1);
}
