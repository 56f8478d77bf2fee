import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { InMemoryStateAdapter, OpenEveRuntime, RunResult } from "@assemblyline-agents/runtime";
import type { RunRecord } from "@assemblyline-agents/core";
import { expect, onTestFinished } from "vitest";
import { agentFolder, toolSource } from "./agent-folder.js";

/**
 * Agents whose time runs out while a subagent works, for the tests of a parent's maxDurationMs pause and of
 * its denial: the subagent's tools count a side effect and wait at a gate the test opens.
 */

/** What the subagent's tools share with the test: how often `effect` ran, and what `slow` waits for. */
type Shared = { __effects?: number; __release?: Promise<void> };
export const shared = globalThis as Shared;

/** A fresh count and gate for one test; `release` lets the subagent's `slow` call return (and is called when the test ends). */
export function sharedForTest(): { release: () => void } {
  let release!: () => void;
  shared.__effects = 0;
  shared.__release = new Promise<void>((resolve) => (release = resolve));
  onTestFinished(() => {
    release();
    delete shared.__effects;
    delete shared.__release;
  });
  return { release };
}

export const agentSource = (fields: string) => `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ ${fields} });\n`;
/** Counts a side effect. */
export const EFFECT = toolSource({ upFront: true, execute: `globalThis.__effects = (globalThis.__effects ?? 0) + 1; return { done: input.value };` });
/** Waits at the test's gate. */
export const SLOW = toolSource({ upFront: true, execute: `await globalThis.__release; return { done: input.value };` });
/** A subagent at `at` (e.g. "subagents/worker") with the `effect` and `slow` tools. */
export const slowWorkerFiles = (at: string) => ({
  [`${at}/agent.ts`]: agentSource(`description: "Works slowly.", instructions: "Work."`),
  [`${at}/tools/effect.ts`]: EFFECT,
  [`${at}/tools/slow.ts`]: SLOW,
});
export const spawnTurn = (name: string) => ({ toolCalls: [{ name: "spawn_subagent", input: { name, task: "do it" } }] });

/** A root agent on the scripted model whose time runs out while its subagent works: it pauses for a decision. */
export function pausingRoot(files: Record<string, string>, script: object, maxDurationMs = 600): string {
  const dir = agentFolder({
    "agent.ts": agentSource(`model: "scripted:" + new URL("./script.json", import.meta.url).pathname, instructions: "Coordinate.", budgets: { maxDurationMs: ${maxDurationMs}, onExceeded: "pause" }`),
    ...files,
  });
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  return dir;
}

/** The one run of `agentId` in `state`. */
export async function onlyRunOf(state: InMemoryStateAdapter, agentId: string): Promise<RunRecord> {
  const { runs } = await state.listRuns({ agentId });
  expect(runs).toHaveLength(1);
  return runs[0]!;
}

/** Waits until `check` holds: a run released by another drive, a child left by a stop. */
export async function until(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs `runtime` (closed when the test ends) until its maxDurationMs pauses it for a decision. */
export async function pausedOnDuration(runtime: OpenEveRuntime): Promise<RunResult> {
  onTestFinished(() => runtime.close());
  const paused = await runtime.run({ message: "go" });
  expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxDurationMs" } });
  return paused;
}

/** The run id of the root's subagent `path`, once the parent's stop has released its lease. */
export async function releasedChild(runtime: OpenEveRuntime, state: InMemoryStateAdapter, path = "worker"): Promise<string> {
  const childId = `${runtime.manifest.agent.id}/${path}`;
  await until(async () => (await onlyRunOf(state, childId)).lease === null);
  return childId;
}
