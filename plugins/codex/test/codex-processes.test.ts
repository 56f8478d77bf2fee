import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { HarnessTurnInput } from "@assemblyline-agents/core";
import { KitHarnessContext } from "@assemblyline-agents/core/testkit";
import { codexAgentHarness } from "../src/index.js";
import { codexRuns, localCodexModel } from "./support.js";

const API_KEY = "sk-local-codex-processes";
const binary = codexRuns();

function turnInput(runId: string, message: string, tools: HarnessTurnInput["context"]["tools"] = []): HarnessTurnInput {
  return { runId, agentRevision: "rev1", modelSpec: "openai-codex/gpt-5.1-codex", context: { instructions: "Be brief.", messages: [{ role: "user", content: message }], tools } };
}

/** This process's descendants whose command line names codex (the launcher and the native app-server). */
function codexDescendants(): number[] {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((line) => {
      const [pid, ppid, ...args] = line.trim().split(/\s+/);
      return { pid: Number(pid), ppid: Number(ppid), args: args.join(" ") };
    });
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const row of rows.filter((candidate) => candidate.ppid === parent)) {
      if (/codex/.test(row.args)) found.push(row.pid);
      walk(row.pid);
    }
  };
  walk(process.pid);
  return found;
}

/**
 * Whether `pid` still runs. A zombie does not: it has exited and waits for its parent to collect
 * its status. Codex's shell snapshot (a `bash -lc` in a session of its own) can outlive the
 * app-server by a moment, and this machine's init collects such orphans only now and then.
 */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

describe.skipIf(!binary.ok)("the codex processes of a turn", () => {
  it("are all gone once a cancelled turn has ended, the native app-server under the launcher too", async () => {
    const { server, home } = await localCodexModel(API_KEY);
    server.reply({ hang: true });
    const controller = new AbortController();
    const turn = codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } })
      .runTurn(turnInput("run_codex_cancelled", "go"), new KitHarnessContext({}, { signal: controller.signal }))
      .catch((error: unknown) => error);
    const askedDeadline = Date.now() + 30_000;
    while (server.requests.length === 0 && Date.now() < askedDeadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const started = codexDescendants();
    controller.abort(new Error("cancelled by the user"));
    await expect(turn).resolves.toMatchObject({ message: "cancelled by the user" });
    const goneDeadline = Date.now() + 5_000;
    while (started.some(running) && Date.now() < goneDeadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const left = started.filter(running);
    for (const pid of left) process.kill(pid, "SIGKILL");
    expect(started.length).toBeGreaterThan(0);
    expect(left).toEqual([]);
  }, 90_000);

  it("of concurrent turns sharing one CODEX_HOME do not get in each other's way: every turn completes", async () => {
    const { server, home } = await localCodexModel(API_KEY);
    const turns = 5;
    for (let i = 0; i < turns; i++) server.reply({ toolCalls: [{ callId: `call_${i}`, name: "lookup", arguments: {} }] });
    for (let i = 0; i < turns; i++) server.reply({ text: "ok" });
    const harness = codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } });
    const lookup = [{ name: "lookup", description: "look up", inputSchema: { type: "object", properties: {} } }];
    const results = await Promise.all(
      Array.from({ length: turns }, (_, i) => harness.runTurn(turnInput(`run_codex_concurrent_${i}`, `go ${i}`, lookup), new KitHarnessContext({ lookup: { run: () => i } })).catch((error: unknown) => String(error))),
    );
    expect(results.map((result) => (typeof result === "object" ? result.status : result))).toEqual(Array(turns).fill("completed"));
  }, 120_000);
});
