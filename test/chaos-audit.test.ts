import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
// @ts-expect-error: the chaos suite is plain ESM, run with node, no types.
import { audit } from "../chaos/lib/ledger.mjs";

/**
 * The chaos suite's verdict on a run rests on the external system (one O_EXCL file per
 * idempotency key beside the ledger), not on the ledger's `effect` line alone: a kill can
 * land between the two.
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
});
