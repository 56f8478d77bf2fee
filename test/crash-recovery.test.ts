import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { buildAgent } from "@assemblyline-agents/runtime";
import type { RunEvent } from "@assemblyline-agents/core";

const child = resolve(import.meta.dirname, "fixtures/crash-child.mjs");
const work = mkdtempSync(join(tmpdir(), "al-crash-"));
const agentDir = join(work, "agent");
let artifactRoot = "";

beforeAll(async () => {
  cpSync(resolve(import.meta.dirname, "fixtures/crash-agent"), agentDir, { recursive: true });
  artifactRoot = (await buildAgent(agentDir)).artifactRoot;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Run the child until it exits (by itself, or by its own SIGKILL). */
async function runChild(stateDir: string, sideEffects: string, killAt: string): Promise<{ killed: boolean }> {
  return promisify(execFile)(process.execPath, [child, artifactRoot, stateDir, join(agentDir, "script.json"), killAt], {
    env: { ...process.env, CRASH_SIDE_EFFECTS: sideEffects },
    timeout: 60_000,
  }).then(
    () => ({ killed: false }),
    (error: { signal?: string; stderr?: string }) => {
      if (error.signal === "SIGKILL") return { killed: true };
      throw new Error(`child failed at ${killAt}: ${error.stderr ?? String(error)}`);
    },
  );
}

async function finalState(stateDir: string): Promise<{ status: string; events: RunEvent[] }> {
  const state = await FileStateAdapter.open({ directory: stateDir });
  try {
    const [run] = (await state.listRuns({ limit: 5 })).runs;
    return { status: run!.status, events: await state.listEvents(run!.id) };
  } finally {
    await state.close();
  }
}

async function crashAndResume(killAt: string) {
  const dir = mkdtempSync(join(work, "point-"));
  const stateDir = join(dir, "state");
  const sideEffects = join(dir, "external.json");
  const first = await runChild(stateDir, sideEffects, killAt);
  if (first.killed) await runChild(stateDir, sideEffects, "none");
  const { status, events } = await finalState(stateDir);
  const attempts = existsSync(`${sideEffects}.attempts`) ? readFileSync(`${sideEffects}.attempts`, "utf8").trim().split("\n") : [];
  const external = JSON.parse(readFileSync(sideEffects, "utf8")) as Record<string, string>;
  return { killed: first.killed, status, events, attempts, external };
}

describe("a run killed with SIGKILL at any point", () => {
  it("completes on resume with each side effect applied once and a contiguous event log", async () => {
    const reference = await crashAndResume("none");
    expect(reference.status).toBe("completed");
    const total = reference.events.length;
    expect(total).toBeGreaterThan(15);
    const seqOf = (type: string, key?: string) => reference.events.find((event) => event.type === type && (key === undefined || event.data.key === key))!.seq;
    const recordDone = seqOf("tool.completed");
    const scanDone = seqOf("durable_step.completed", "scan:milk");

    const points = Array.from({ length: total }, (_, index) => [`before:${index + 1}`, `after:${index + 1}`]).flat();
    const outcomes: Array<{ point: string } & Awaited<ReturnType<typeof crashAndResume>>> = [];
    for (let index = 0; index < points.length; index += 4) {
      const batch = points.slice(index, index + 4);
      outcomes.push(...(await Promise.all(batch.map(async (point) => ({ point, ...(await crashAndResume(point)) })))));
    }

    for (const outcome of outcomes) {
      const where = `killed ${outcome.point}`;
      expect(outcome.killed, where).toBe(true);
      expect(outcome.status, where).toBe("completed");
      expect(outcome.events.map((event) => event.seq), where).toEqual(outcome.events.map((_, index) => index + 1));
      expect(new Set(outcome.events.map((event) => event.id)).size, where).toBe(outcome.events.length);
      // The external system saw one write, deduped by the idempotency key, whatever re-ran.
      expect(Object.values(outcome.external), where).toEqual(["buy milk"]);
      const [when, seqText] = outcome.point.split(":");
      const killedAfter = when === "after" ? Number(seqText) : Number(seqText) - 1;
      const recordRuns = outcome.attempts.filter((line) => line === "record_note").length;
      const scanRuns = outcome.attempts.filter((line) => line === "scan").length;
      // Once a call or step is durably complete it is never executed again.
      if (killedAfter >= recordDone) expect(recordRuns, where).toBe(1);
      else expect(recordRuns, where).toBeLessThanOrEqual(2);
      if (killedAfter >= scanDone) expect(scanRuns, where).toBe(1);
      else expect(scanRuns, where).toBeLessThanOrEqual(2);
      expect(outcome.events.filter((event) => event.type === "tool.completed")).toHaveLength(2);
      expect(outcome.events.at(-1)!.type, where).toBe("run.completed");
    }
  }, 600_000);
});
