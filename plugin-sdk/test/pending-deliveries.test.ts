import { describe, expect, it } from "vitest";
import { PendingDeliveries, type DeliveryRecord } from "../src/index.js";

const delivery = (id: string, availableAt: string, status: DeliveryRecord["status"] = "pending"): DeliveryRecord => ({
  id, runId: `run_${id}`, channel: "chat", conversationId: null, payload: {}, status, attempts: 0, availableAt, lastError: null, lease: null, createdAt: availableAt, updatedAt: availableAt,
});
const at = (second: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, second)).toISOString();
const ms = (second: number) => Date.parse(at(second));
const ids = (records: DeliveryRecord[]) => records.map((record) => record.id);

describe("PendingDeliveries", () => {
  it("gives the due deliveries earliest first, then in the order first held, and none not yet due", () => {
    const pending = new PendingDeliveries();
    for (const [id, second] of [["a", 5], ["b", 1], ["c", 5], ["d", 3], ["e", 9]] as const) pending.put(delivery(id, at(second)));
    expect(ids(pending.due(ms(5), () => true, 100))).toEqual(["b", "d", "a", "c"]);
    expect(ids(pending.due(ms(4), () => true, 100))).toEqual(["b", "d"]);
    expect(ids(pending.due(ms(0), () => true, 100))).toEqual([]);
    // What accept refuses (a live lease) is passed over, and the limit counts what is taken.
    expect(ids(pending.due(ms(9), (record) => record.id !== "b", 2))).toEqual(["d", "a"]);
    expect(pending.size).toBe(5);
  });

  it("moves a delivery whose availableAt changed, in place or as a new record, and lets go of one no longer pending", () => {
    const pending = new PendingDeliveries();
    const records = [delivery("a", at(1)), delivery("b", at(2)), delivery("c", at(3))];
    for (const record of records) pending.put(record);
    // Retried later, changed in place as the in-memory state does.
    records[0]!.availableAt = at(8);
    pending.put(records[0]!);
    // Retried sooner, as a new record as the file state's tables do.
    pending.put({ ...records[2]!, availableAt: at(0) });
    expect(ids(pending.due(ms(10), () => true, 100))).toEqual(["c", "b", "a"]);
    // Moved back to the due time of one held after it: the order it was first held in still decides.
    pending.put({ ...records[0]!, availableAt: at(2) });
    expect(ids(pending.due(ms(10), () => true, 100))).toEqual(["c", "a", "b"]);
    pending.put({ ...records[1]!, status: "delivered" });
    pending.delete("c");
    pending.delete("never-held");
    expect(ids(pending.due(ms(10), () => true, 100))).toEqual(["a"]);
    expect(pending.size).toBe(1);
    // One that is not pending is not taken in.
    pending.put(delivery("f", at(1), "failed"));
    expect(pending.size).toBe(1);
  });

  it("never gives a delivery whose availableAt does not parse, and takes the whole runs below a limit", () => {
    const pending = new PendingDeliveries();
    pending.put(delivery("bad", "not a time"));
    for (const id of ["a", "b", "c"]) pending.put(delivery(id, at(1)));
    expect(ids(pending.due(ms(59), () => true, 100))).toEqual(["a", "b", "c"]);
    expect(ids(pending.due(ms(59), () => true, 2.5))).toEqual(["a", "b"]);
    expect(pending.due(ms(59), () => true, Number.NaN)).toEqual([]);
    expect(pending.due(ms(59), () => true, 0)).toEqual([]);
    pending.put(delivery("bad", at(0)));
    expect(ids(pending.due(ms(59), () => true, Number.POSITIVE_INFINITY))).toEqual(["bad", "a", "b", "c"]);
  });
});
