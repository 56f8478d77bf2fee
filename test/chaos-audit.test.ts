import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
// @ts-expect-error: the chaos suite is plain ESM, run with node, no types.
import { audit } from "../chaos/lib/ledger.mjs";
// @ts-expect-error: the chaos suite is plain ESM, run with node, no types.
import { faultProblems } from "../chaos/scenarios/replicas.mjs";

/**
 * The chaos suite's verdict on a run rests on the external system (one O_EXCL file per
 * idempotency key beside the ledger), not on the ledger's `effect` line alone: a kill can
 * land between the two. A call's second execution is safe only before its tool.completed.
 */
describe("chaos audit", () => {
  let dir: string;
  let ledger: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "al-chaos-audit-"));
    ledger = join(dir, "ledger.log");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const lines = (...text: string[]) => writeFileSync(ledger, `${text.join("\n")}\n`);
  /** The external system applies `key`, as the chaos tool does. */
  const apply = (key: string) => {
    mkdirSync(`${ledger}.keys`, { recursive: true });
    writeFileSync(join(`${ledger}.keys`, createHash("sha256").update(key).digest("hex")), "cli", { flag: "wx" });
  };
  const completedRun = () => new Map([["run_1", { status: "completed", events: [{ seq: 1, type: "run.created" }, { seq: 2, type: "run.completed" }] }]]);

  it("counts an effect applied by a process killed before its ledger line, which the retry finds deduped", () => {
    apply("key-a");
    lines("attempt run_1 call_1 key-a cli", "attempt run_1 call_1 key-a cli", "deduped run_1 call_1 key-a cli", "completed run_1 seq=2 cli");
    const { figures, failed, problems } = audit(ledger, new Set(["run_1"]), completedRun());
    expect(problems).toEqual([]);
    expect(failed).toBe(false);
    expect(figures).toMatchObject({ completed: 1, lost: 0, effectsUnlogged: 1, effectsDeduped: 1, duplicateEffects: 0 });
  });

  it("finds a run lost when it completed but the system never applied its effect", () => {
    lines("attempt run_1 call_1 key-a cli", "completed run_1 seq=2 cli");
    const { figures, failed, problems } = audit(ledger, new Set(["run_1"]), completedRun());
    expect(failed).toBe(true);
    expect(figures).toMatchObject({ completed: 0, lost: 1 });
    expect(problems).toEqual(["lost: run_1 is completed with 0 effect(s) applied (ledger: attempt by cli, completed seq=2 by cli; events: run.created, run.completed)"]);
  });

  it("finds a duplicate when the system applied the run's effect under two keys", () => {
    apply("key-a");
    apply("key-b");
    lines("attempt run_1 call_1 key-a cli", "effect run_1 call_1 key-a cli", "attempt run_1 call_1 key-b cli", "completed run_1 seq=2 cli");
    const { figures, failed } = audit(ledger, new Set(["run_1"]), completedRun());
    expect(failed).toBe(true);
    expect(figures).toMatchObject({ completed: 1, duplicateEffects: 1, effectsUnlogged: 1 });
  });

  /** A run's stored events, numbered from 1. */
  const storedRun = (...events: Array<[type: string, data?: Record<string, string>]>) =>
    new Map([["run_1", { status: "completed", events: events.map(([type, data], index) => ({ seq: index + 1, type, data: data ?? {} })) }]]);

  it("fails a run whose tool call ran again after its tool.completed, though the system deduped the effect", () => {
    apply("key-a");
    lines("attempt run_1 call_1 key-a cli", "effect run_1 call_1 key-a cli", "attempt run_1 call_1 key-a cli", "deduped run_1 call_1 key-a cli", "completed run_1 seq=8 cli");
    const store = storedRun(
      ["run.created"],
      ["tool.called", { callId: "call_1" }],
      ["effect.applying", { toolCallId: "call_1" }],
      ["tool.completed", { callId: "call_1" }],
      ["effect.applying", { toolCallId: "call_1" }],
      ["tool.completed", { callId: "call_1" }],
      ["model.response"],
      ["run.completed"],
    );
    const { figures, failed, problems } = audit(ledger, new Set(["run_1"]), store);
    expect(failed).toBe(true);
    expect(figures).toMatchObject({ completed: 1, duplicateEffects: 0, effectsDeduped: 1, callsRerunAfterCompletion: 1 });
    expect(problems).toEqual(["tool call re-run after it completed: run_1: effect.applying (seq 5) for call_1"]);
  });

  it("passes a call re-run after a kill that landed before its tool.completed, saved by its stable key", () => {
    apply("key-a");
    lines("attempt run_1 call_1 key-a cli", "effect run_1 call_1 key-a cli", "attempt run_1 call_1 key-a cli", "deduped run_1 call_1 key-a cli", "completed run_1 seq=7 cli");
    const store = storedRun(
      ["run.created"],
      ["tool.called", { callId: "call_1" }],
      ["effect.applying", { toolCallId: "call_1" }],
      ["effect.applying", { toolCallId: "call_1" }],
      ["tool.completed", { callId: "call_1" }],
      ["model.response"],
      ["run.completed"],
    );
    const { figures, failed, problems } = audit(ledger, new Set(["run_1"]), store);
    expect(problems).toEqual([]);
    expect(failed).toBe(false);
    expect(figures).toMatchObject({ completed: 1, effectsDeduped: 1, callsRerunAfterCompletion: 0 });
  });

  it("fails when no run was started, so nothing was checked", () => {
    const { figures, failed, problems } = audit(join(dir, "no-ledger.log"), new Set(), new Map());
    expect(figures).toMatchObject({ started: 0, completed: 0 });
    expect(failed).toBe(true);
    expect(problems).toEqual(["nothing was checked: no run was started"]);
  });
});

describe("chaos replica scenario: proof that its faults happened", () => {
  const happened = { kills: 1, stops: 1, frozenMidCall: 2, runsSubmitted: 60, runsInStore: 60 };

  it("accepts a run whose required faults all happened and whose store holds one run per submission", () => {
    expect(faultProblems(happened, ["kills", "stops", "frozenMidCall"])).toEqual([]);
  });

  it("fails when a required fault never happened, such as a freeze that landed outside any tool call", () => {
    expect(faultProblems({ ...happened, frozenMidCall: 0 }, ["kills", "stops", "frozenMidCall", "wokenAfterTakeover"])).toEqual([
      "fault did not happen: frozenMidCall is 0",
      "fault did not happen: wokenAfterTakeover is 0",
    ]);
  });

  it("fails when the store holds more runs than were submitted: one Idempotency-Key started two", () => {
    expect(faultProblems({ ...happened, runsInStore: 61 }, [])).toEqual(["the store holds 61 runs for 60 submitted: an Idempotency-Key started more than one"]);
  });
});
