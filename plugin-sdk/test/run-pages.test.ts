import { describe, expect, it } from "vitest";
import { RunsInCreationOrder, type OrderedRun, type RunRecord } from "../src/index.js";

const run = (ordinal: number, status: RunRecord["status"] = "queued"): OrderedRun => ({
  ordinal,
  record: { id: `run_${ordinal}`, agentId: "a", agentRevision: "r", conversationId: null, status, modelSpec: "m", input: { message: "", metadata: {} }, output: null, error: null, lastSeq: 1, observedSeq: 0, lease: null, createdAt: "", updatedAt: "" },
});
const ids = (page: { runs: OrderedRun[] }) => page.runs.map(({ record }) => record.id);

describe("RunsInCreationOrder", () => {
  it("keeps runs added out of order in creation order, and takes out the one it holds", () => {
    const order = new RunsInCreationOrder<OrderedRun>();
    const runs = [5, 1, 9, 3, 7].map((ordinal) => run(ordinal));
    for (const added of runs) order.add(added);
    expect(ids(order.page())).toEqual(["run_9", "run_7", "run_5", "run_3", "run_1"]);
    order.remove(runs[3]!);
    // A different run with a held ordinal is not the one held: nothing is taken out.
    order.remove(run(7));
    expect(ids(order.page())).toEqual(["run_9", "run_7", "run_5", "run_1"]);
    expect(order.size).toBe(4);
  });

  it("starts a page before its cursor's run, even when that run is gone", () => {
    const order = new RunsInCreationOrder<OrderedRun>();
    const runs = [1, 2, 3, 4, 5].map((ordinal) => run(ordinal, ordinal % 2 === 0 ? "completed" : "queued"));
    for (const added of runs) order.add(added);
    const first = order.page({ limit: 2 });
    expect(ids(first)).toEqual(["run_5", "run_4"]);
    order.remove(runs[3]!);
    expect(ids(order.page({ limit: 2, cursor: first.nextCursor! }))).toEqual(["run_3", "run_2"]);
    expect(order.page({ status: "completed", limit: 1 })).toMatchObject({ runs: [{ ordinal: 2 }], nextCursor: null });
  });

  it("takes a fractional limit as the whole runs below it, and refuses one that is not a number", () => {
    const order = new RunsInCreationOrder<OrderedRun>();
    for (const ordinal of [1, 2, 3]) order.add(run(ordinal));
    expect(ids(order.page({ limit: 2.5 }))).toEqual(["run_3", "run_2"]);
    expect(() => order.page({ limit: Number.NaN })).toThrow(expect.objectContaining({ code: "AL_ERR_STATE_INPUT_INVALID" }));
  });

  it("keeps the runs not completed or failed apart, in creation order, as their statuses change", () => {
    const order = new RunsInCreationOrder<OrderedRun>();
    const runs = [4, 1, 3, 2, 5].map((ordinal) => run(ordinal, ordinal === 5 ? "completed" : "queued"));
    for (const added of runs) order.add(added);
    const all = () => order.oldestUnfinished(() => true, 100).map(({ record }) => record.id);
    // Added out of order, a finished run left out.
    expect(all()).toEqual(["run_1", "run_2", "run_3", "run_4"]);
    const [four, one, three] = runs;
    three!.record.status = "failed";
    order.statusChanged(three!);
    one!.record.status = "waiting_approval";
    order.statusChanged(one!);
    expect(all()).toEqual(["run_1", "run_2", "run_4"]);
    // A status change the list already reflects changes nothing; a run finishing twice is taken out once.
    order.statusChanged(one!);
    order.statusChanged(three!);
    expect(all()).toEqual(["run_1", "run_2", "run_4"]);
    // A page of unfinished statuses walks those runs; one that asks for a finished status walks every run.
    expect(ids(order.page({ status: ["queued", "waiting_approval"] }))).toEqual(["run_4", "run_2", "run_1"]);
    const page = order.page({ status: ["queued", "waiting_approval"], limit: 1 });
    expect(ids(order.page({ status: ["queued", "waiting_approval"], cursor: page.nextCursor! }))).toEqual(["run_2", "run_1"]);
    expect(ids(order.page({ status: ["queued", "failed", "completed"] }))).toEqual(["run_5", "run_4", "run_3", "run_2"]);
    order.remove(four!);
    expect(all()).toEqual(["run_1", "run_2"]);
    expect(order.size).toBe(4);
  });

  it("gives the oldest unfinished runs it accepts, at most the whole runs below the limit", () => {
    const order = new RunsInCreationOrder<OrderedRun>();
    for (const ordinal of [1, 2, 3, 4, 5, 6]) order.add(run(ordinal, ordinal === 2 ? "running" : "queued"));
    const oldest = (accept: (run: OrderedRun) => boolean, limit: number) => order.oldestUnfinished(accept, limit).map(({ record }) => record.id);
    expect(oldest(({ ordinal }) => ordinal % 2 === 0, 2)).toEqual(["run_2", "run_4"]);
    expect(oldest(() => true, 2.5)).toEqual(["run_1", "run_2"]);
    expect(oldest(() => true, Number.NaN)).toEqual([]);
    expect(oldest(() => true, 0)).toEqual([]);
    expect(oldest(() => true, Number.POSITIVE_INFINITY)).toHaveLength(6);
  });
});
