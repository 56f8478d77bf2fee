import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { buildAgent } from "@assemblyline-agents/runtime";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
const work = mkdtempSync(join(tmpdir(), "al-eve-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A private copy of the eve-layout fixture (runs keep their file state beside the agent). */
function fixtureCopy(name: string): string {
  const dir = join(work, name);
  cpSync(resolve(import.meta.dirname, "fixtures/eve-agent"), dir, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
  return dir;
}

async function node(args: string[], env: Record<string, string> = {}) {
  return promisify(execFile)(process.execPath, args, { cwd: root, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error", ...env }, timeout: 180_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, signal: null as string | null, stdout, stderr }),
    (error: { code: number; signal: string | null; stdout: string; stderr: string }) => ({ code: error.code, signal: error.signal, stdout: error.stdout, stderr: error.stderr }),
  );
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : []);

describe("an agent folder in eve's layout (instructions.md, skills with references/, a subagent with its own tools and instructions)", () => {
  it("pauses on the researcher's approval, shows it on the parent, and completes when the CLI approves it from another process", async () => {
    const agent = fixtureCopy("cli");
    const effects = join(work, "cli-effects.txt");
    const script = join(agent, "script.json");
    const paused = await node([bin, "run", agent, "--message", "Checkout is slow since noon.", "--model", `scripted:${script}`, "--json"], { EVE_SIDE_EFFECTS: effects });
    expect(paused.code, paused.stderr).toBe(3);
    const result = JSON.parse(paused.stdout).data.result;
    expect(result.status).toBe("waiting_approval");
    expect(result.pendingApprovals).toEqual([expect.objectContaining({ toolName: "archive_lookup", subagent: "researcher" })]);

    const shown = await node([bin, "runs", "show", result.runId, "--agent", agent]);
    expect(shown.stdout).toMatch(/subagent\.started/);
    expect(shown.stdout).toMatch(/waits for approval of archive_lookup .* in subagent researcher \(run run_sub_/);

    const approved = await node([bin, "approve", result.runId, result.pendingApprovals[0].callId, "--agent", agent], { EVE_SIDE_EFFECTS: effects });
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout.trim().split("\n").at(-1)).toBe("Triage done: see the researcher's prior incidents.");

    const state = await FileStateAdapter.open({ directory: join(agent, ".assembly-line", "state") });
    try {
      const spawn = (await state.listToolCalls(result.runId)).find((call) => call.toolName === "spawn_subagent");
      expect(spawn?.output).toMatchObject({ subagent: "researcher", output: { priorIncidents: ["INC-12: checkout timeouts"] } });
      expect((await state.getRun(result.runId))?.status).toBe("completed");
    } finally {
      await state.close();
    }
    expect(lines(effects)).toEqual(["record_finding checkout is slow", "archive_lookup checkout timeout", "summarize_hits"]);
  }, 600_000);

  it("recovers parent and child after a SIGKILL while the child runs, repeating no completed work", async () => {
    const agent = fixtureCopy("crash");
    const { artifactRoot } = await buildAgent(agent);
    const stateDir = join(work, "crash-state");
    const effects = join(work, "crash-effects.txt");
    const env = { EVE_SIDE_EFFECTS: effects, EVE_CRASH_MARKER: join(work, "crash-marker") };
    const child = resolve(import.meta.dirname, "fixtures/subagent-crash-child.mjs");
    const args = (mode: string) => [child, artifactRoot, stateDir, join(work, "crash-sandbox"), join(agent, "script.json"), mode];

    const first = await node(args("start"), env);
    expect(first.signal, first.stderr).toBe("SIGKILL");
    const second = await node(args("recover"), env);
    expect(second.code, second.stderr).toBe(0);

    const state = await FileStateAdapter.open({ directory: stateDir });
    try {
      const { runs } = await state.listRuns({ limit: 10 });
      expect(runs.map((run) => run.status).sort()).toEqual(["completed", "completed"]);
      const parent = runs.find((run) => !run.input.parent)!;
      const childRun = runs.find((run) => run.input.parent)!;
      expect(childRun.input.parent).toMatchObject({ runId: parent.id, subagent: "researcher" });
      const parentEvents = await state.listEvents(parent.id);
      expect(parentEvents.filter((event) => event.type === "subagent.started")).toHaveLength(1);
      expect(parentEvents.filter((event) => event.type === "subagent.completed")).toHaveLength(1);
      expect(parentEvents.map((event) => event.seq)).toEqual(parentEvents.map((_, index) => index + 1));
      expect(parent.output).toEqual({ text: "Triage done: see the researcher's prior incidents." });
    } finally {
      await state.close();
    }
    // Completed work ran once; only the call the kill interrupted ran again.
    expect(lines(effects)).toEqual(["record_finding checkout is slow", "archive_lookup checkout timeout", "summarize_hits", "summarize_hits"]);
  }, 300_000);
});
