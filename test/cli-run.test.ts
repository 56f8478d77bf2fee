import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
// A private copy: runs keep file state beside the agent, and other suites use the example too.
const copy = mkdtempSync(join(tmpdir(), "al-cli-"));
const example = join(copy, "notes-agent");
const scratch: string[] = [copy];
afterAll(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});
cpSync(join(root, "examples/notes-agent"), example, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
const script = join(example, "conversations/remember-milk.json");

/** A command that has not exited by then is killed and fails its test by name, instead of running into the test's timeout. */
const COMMAND_TIMEOUT_MS = 40_000;

async function cli(args: string[]) {
  return promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error" }, timeout: COMMAND_TIMEOUT_MS, killSignal: "SIGKILL" }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; killed?: boolean; stdout: string; stderr: string }) => {
      if (error.killed) throw new Error(`assembly-line ${args.join(" ")} did not exit within ${COMMAND_TIMEOUT_MS} ms\nstdout: ${error.stdout}\nstderr: ${error.stderr}`);
      return { code: error.code, stdout: error.stdout, stderr: error.stderr };
    },
  );
}

describe("assembly-line CLI", () => {
  it("builds the example and prints its revision", async () => {
    const { code, stdout } = await cli(["build", example]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/agentRevision rev_[0-9a-f]{32}/);
  });

  it("runs the example on a scripted conversation, pausing for approval then completing with --approve all", async () => {
    const paused = await cli(["run", example, "--message", "Remember to buy milk", "--model", `scripted:${script}`]);
    // 3: the run paused awaiting a decision.
    expect(paused.code).toBe(3);
    expect(paused.stdout).toMatch(/approval\.requested\s+record_note/);
    expect(paused.stdout).toMatch(/waits for approval of record_note[\s\S]*approve: npx assembly-line approve run_/);

    const done = await cli(["run", example, "--message", "Remember to buy milk", "--model", `scripted:${script}`, "--approve", "all"]);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/note\.recorded/);
    expect(done.stdout).toMatch(/tool\.completed\s+lookup_notes -> \{"query":"milk","matches":\["Buy milk on the way home"\]\}/);
    expect(done.stdout.trim().split("\n").at(-1)).toBe('Noted: "Buy milk on the way home". It\'s the only note about milk.');
  });

  it("pauses in one process and completes in another when approved, without re-running completed work", async () => {
    const paused = await cli(["run", example, "--message", "Remember to buy milk", "--offline-script", script, "--json"]);
    expect(paused.code).toBe(3);
    const result = JSON.parse(paused.stdout).data.result;
    expect(result.status).toBe("waiting_approval");
    const pending = result.pendingApprovals[0];

    const listed = await cli(["runs", "list", "--agent", example, "--status", "waiting_approval"]);
    expect(listed.stdout).toContain(result.runId);

    const approved = await cli(["approve", result.runId, pending.callId, "--agent", example]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(/approval\.granted/);
    expect(approved.stdout.trim().split("\n").at(-1)).toBe('Noted: "Buy milk on the way home". It\'s the only note about milk.');

    const shown = await cli(["runs", "show", result.runId, "--agent", example, "--json"]);
    const { events } = JSON.parse(shown.stdout).data;
    expect(events.map((event: { seq: number }) => event.seq)).toEqual(events.map((_: unknown, index: number) => index + 1));
    expect(events.filter((event: { type: string; data: { toolName?: string } }) => event.type === "tool.completed" && event.data.toolName === "record_note")).toHaveLength(1);
    expect(events.filter((event: { type: string }) => event.type === "model.response")).toHaveLength(3);

    const again = await cli(["approve", result.runId, pending.callId, "--agent", example]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/AL_ERR_RUN_NOT_RESUMABLE/);
  });

  it("answers a run's question from another process", async () => {
    const askScript = join(example, "conversations/ask.json");
    writeFileSync(askScript, JSON.stringify({ turns: [{ toolCalls: [{ name: "ask_question", input: { question: "Which shop?" } }] }, { text: "Got it." }] }));
    const asked = await cli(["run", example, "--message", "buy milk", "--model", `scripted:${askScript}`, "--json"]);
    expect(asked.code).toBe(3);
    const result = JSON.parse(asked.stdout).data.result;
    expect(result.status).toBe("waiting_input");
    const answered = await cli(["answer", result.runId, "the corner shop", "--agent", example]);
    expect(answered.code).toBe(0);
    expect(answered.stdout).toMatch(/input\.received/);
    expect(answered.stdout.trim().split("\n").at(-1)).toBe("Got it.");
  });

  it("releases, when it starts a run, the sandbox a stopped process left of a finished run", async () => {
    const done = await cli(["run", example, "--message", "Remember to buy milk", "--model", `scripted:${script}`, "--approve", "all", "--json"]);
    expect(done.code).toBe(0);
    const { runId } = JSON.parse(done.stdout).data.result as { runId: string };
    // As if the process had stopped between the run's end and its sandbox's release.
    const left = join(example, ".assembly-line", "sandboxes", runId);
    mkdirSync(join(left, "workspace"), { recursive: true });
    writeFileSync(join(left, "workspace", "draft.md"), "left behind");
    const next = await cli(["run", example, "--message", "Remember to buy milk", "--model", `scripted:${script}`, "--approve", "all"]);
    expect(next.code).toBe(0);
    expect(existsSync(left)).toBe(false);
  });

  it("prints one JSON envelope with the run's events and result with --json", async () => {
    const { code, stdout } = await cli(["run", example, "--message", "Remember", "--model", `scripted:${script}`, "--approve", "none", "--json"]);
    expect(code).toBe(0);
    const { ok, data } = JSON.parse(stdout) as { ok: boolean; data: { events: Array<{ seq: number; type: string }>; result: { status: string } } };
    expect(ok).toBe(true);
    expect(data.events.map((event) => event.seq)).toEqual(data.events.map((_, index) => index + 1));
    expect(data.events.map((event) => event.type)).toContain("approval.denied");
    expect(data.result.status).toBe("completed");
  });

  it("explains a malformed model script and a bad option", async () => {
    const dir = mkdtempSync(join(tmpdir(), "al-script-"));
    scratch.push(dir);
    writeFileSync(join(dir, "bad.json"), JSON.stringify({ turns: [{ toolCalls: [] }] }));
    const bad = await cli(["run", example, "--message", "x", "--model", `scripted:${join(dir, "bad.json")}`]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/AL_ERR_SCRIPTED_MODEL[\s\S]*turns\[0\]\.toolCalls must be a non-empty array/);
    mkdirSync(join(dir, "unknown-model"));
    writeFileSync(join(dir, "unknown-model/agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "openai/gpt-9-imaginary" });\n`);
    const unknown = await cli(["build", join(dir, "unknown-model")]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/AL_ERR_MODEL_UNKNOWN[\s\S]*gpt-9-imaginary/);
    const usage = await cli(["run", example, "--approve", "maybe", "--message", "x"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--approve <decision>' argument 'maybe' is invalid. Allowed choices are all, none/);
  });
});
