import { OrderedSet } from "js-sdsl";
import type { DeliveryRecord } from "./runs.js";

/** A pending delivery as held: its record, when it is due, and the order it was first held in. */
interface HeldDelivery {
  record: DeliveryRecord;
  dueMs: number;
  order: number;
}

/**
 * The pending deliveries of a state store that keeps its deliveries in memory, kept by when they
 * are due (`availableAt`, then the order they were first held): a claim walks the due ones from the
 * earliest and stops at its limit, instead of parsing and sorting every pending delivery. While a
 * channel is down every delivery waits for its retry, and that scan cost 28 ms a claim at 100,000
 * pending, on every pass of a host's outbox. They are a balanced tree (js-sdsl's OrderedSet), not a
 * sorted array, whose every change moved the entries after it: 25 µs a delivery at 100,000 pending.
 */
export class PendingDeliveries {
  private readonly held = new Map<string, HeldDelivery>();
  /** Ascending by (dueMs, order). */
  private readonly queue = new OrderedSet<HeldDelivery>([], byDueThenOrder);
  private nextOrder = 0;

  get size(): number {
    return this.held.size;
  }

  /**
   * Hold `record` while it is pending, in its place by due time; one no longer pending is let go.
   * Call it after every change to a delivery's status or `availableAt`, a change made in place too.
   */
  put(record: DeliveryRecord): void {
    if (record.status !== "pending") {
      this.delete(record.id);
      return;
    }
    const dueMs = dueTime(record.availableAt);
    const held = this.held.get(record.id);
    if (held === undefined) {
      const entry = { record, dueMs, order: this.nextOrder++ };
      this.held.set(record.id, entry);
      this.queue.insert(entry);
      return;
    }
    held.record = record;
    if (held.dueMs === dueMs) return;
    // Out by its old place in the order, back in by its new one.
    this.queue.eraseElementByKey(held);
    held.dueMs = dueMs;
    this.queue.insert(held);
  }

  /** Let the delivery with `id` go, if it is held. */
  delete(id: string): void {
    const held = this.held.get(id);
    if (held === undefined) return;
    this.held.delete(id);
    this.queue.eraseElementByKey(held);
  }

  /**
   * The deliveries due at `nowMs` that `accept` takes (a store passes its lease check), earliest due
   * first, then in the order first held; at most the whole part of `limit`, none for NaN.
   */
  due(nowMs: number, accept: (record: DeliveryRecord) => boolean, limit: number): DeliveryRecord[] {
    const most = Math.trunc(limit) || 0;
    const found: DeliveryRecord[] = [];
    for (const entry of this.queue) {
      if (found.length >= most || entry.dueMs > nowMs) break;
      if (accept(entry.record)) found.push(entry.record);
    }
    return found;
  }
}

const byDueThenOrder = (a: HeldDelivery, b: HeldDelivery): number => a.dueMs - b.dueMs || a.order - b.order;

/** An `availableAt` that does not parse is never due, as a claim comparing its NaN with now found it. */
function dueTime(availableAt: string): number {
  const ms = Date.parse(availableAt);
  return Number.isNaN(ms) ? Number.POSITIVE_INFINITY : ms;
}
