import { AssemblyLineError } from "../errors.js";
import { OrderedSet } from "js-sdsl";
import { checkRunListFilter } from "./input-checks.js";
import { partitionPoint } from "./partition-point.js";
import { TERMINAL_RUN_STATUSES, type RunListFilter, type RunRecord, type RunStatus } from "./runs.js";

/** Page size of listRuns when the filter gives none. */
export const DEFAULT_RUN_PAGE_SIZE = 50;

/** A run as a store that keeps its runs in memory holds it: its record and its place in creation order. */
export interface OrderedRun {
  record: RunRecord;
  /** Grows with every run created: listRuns pages by it, so runs created in the same millisecond keep their order. */
  ordinal: number;
}

/**
 * Runs in creation order (ordinals ascending), for a state store that keeps its runs in memory: a
 * `listRuns` page is read walking back from its cursor until the page is full, instead of filtering
 * and sorting every run the store holds (140 ms a page at 500,000 runs, on every run list and every
 * recovery sweep of a host that has served that many). The runs not completed or failed are also
 * kept apart, in the same order, so that a page of unfinished runs and a recovery claim cost the
 * runs in flight, not every run the store has finished. Those are a balanced tree by ordinal
 * (js-sdsl's OrderedSet), not a sorted array: finishing the oldest of 100,000 queued runs moved
 * every run after it, 52 µs a run.
 *
 * The store tells it of every status change (`statusChanged`); a run's ordinal never changes.
 */
export class RunsInCreationOrder<T extends OrderedRun> {
  private readonly runs: T[] = [];
  private readonly unfinished = new OrderedSet<T>([], byOrdinal);

  get size(): number {
    return this.runs.length;
  }

  /** Add a run; one made after every run held goes at the end, as a store creating runs adds them. */
  add(run: T): void {
    insertInOrder(this.runs, run);
    if (!isFinished(run.record.status)) this.unfinished.insert(run);
  }

  /** Take a run out (the one added with this ordinal), if it is held. */
  remove(run: T): void {
    removeFromOrder(this.runs, run);
    this.unfinished.eraseElementByKey(run);
  }

  /** Call after a held run's status changed: it joins or leaves the unfinished runs. */
  statusChanged(run: T): void {
    // A set holds a run once: inserting one held already changes nothing.
    if (isFinished(run.record.status)) this.unfinished.eraseElementByKey(run);
    else this.unfinished.insert(run);
  }

  /**
   * One page of `filter`: the newest matching runs created before its cursor, at most its limit,
   * and the cursor of the next page when more match.
   */
  page(filter: RunListFilter = {}): { runs: T[]; nextCursor: string | null } {
    const limit = checkRunListFilter(filter) ?? DEFAULT_RUN_PAGE_SIZE;
    const statuses = filter.status === undefined ? undefined : new Set([filter.status].flat());
    const onlyUnfinished = statuses !== undefined && ![...statuses].some(isFinished);
    const before = filter.cursor === undefined ? Number.POSITIVE_INFINITY : decodeRunCursor(filter.cursor);
    const runs: T[] = [];
    for (const run of onlyUnfinished ? newestInSet(this.unfinished, before) : newestInArray(this.runs, before)) {
      const { record } = run;
      if (statuses !== undefined && !statuses.has(record.status)) continue;
      if (filter.agentId !== undefined && record.agentId !== filter.agentId) continue;
      if (filter.conversationId !== undefined && record.conversationId !== filter.conversationId) continue;
      if (filter.observersBehind === true && record.observedSeq >= record.lastSeq) continue;
      if (runs.length === limit) return { runs, nextCursor: encodeRunCursor(runs[runs.length - 1]!.ordinal) };
      runs.push(run);
    }
    return { runs, nextCursor: null };
  }

  /** The oldest unfinished runs that `accept` takes, at most `limit`: what a recovery claim leases. */
  oldestUnfinished(accept: (run: T) => boolean, limit: number): T[] {
    // Whole runs below a fractional limit, none for NaN: as the filter-and-slice it replaces.
    const most = Math.trunc(limit) || 0;
    const found: T[] = [];
    for (const run of this.unfinished) {
      if (found.length >= most) break;
      if (accept(run)) found.push(run);
    }
    return found;
  }
}

function isFinished(status: RunStatus): boolean {
  return TERMINAL_RUN_STATUSES.includes(status);
}

const byOrdinal = (a: OrderedRun, b: OrderedRun): number => a.ordinal - b.ordinal;

/** The runs created before `before` (an ordinal), newest first. */
function* newestInArray<T extends OrderedRun>(runs: readonly T[], before: number): Generator<T> {
  for (let index = countBefore(runs, before) - 1; index >= 0; index -= 1) yield runs[index]!;
}

/** The same of a set: from the last run below `before`, stepping back to the first. */
function* newestInSet<T extends OrderedRun>(runs: OrderedSet<T>, before: number): Generator<T> {
  const at = runs.reverseUpperBound({ ordinal: before } as T);
  if (at.equals(runs.end())) return;
  const first = runs.begin();
  for (;;) {
    yield at.pointer;
    if (at.equals(first)) return;
    at.pre();
  }
}

function insertInOrder<T extends OrderedRun>(runs: T[], run: T): void {
  const last = runs[runs.length - 1];
  if (last === undefined || last.ordinal < run.ordinal) runs.push(run);
  else runs.splice(countBefore(runs, run.ordinal), 0, run);
}

function removeFromOrder<T extends OrderedRun>(runs: T[], run: T): void {
  const index = countBefore(runs, run.ordinal);
  if (runs[index] === run) runs.splice(index, 1);
}

/** How many of `runs` have an ordinal below `ordinal`: where a run with it goes. */
function countBefore(runs: readonly OrderedRun[], ordinal: number): number {
  return partitionPoint(runs, (run) => run.ordinal < ordinal);
}

function encodeRunCursor(ordinal: number): string {
  return Buffer.from(JSON.stringify({ before: ordinal }), "utf8").toString("base64url");
}

function decodeRunCursor(cursor: string): number {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { before?: unknown };
    if (typeof parsed.before === "number" && Number.isFinite(parsed.before)) return parsed.before;
  } catch {
    // fall through to the error below
  }
  throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `listRuns got cursor "${cursor}", which this state store did not produce`, {
    fix: "Pass back the nextCursor of the previous page unchanged, or omit cursor to start from the newest run.",
  });
}
