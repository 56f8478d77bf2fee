import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { JsonValue, SandboxAdapter } from "@assemblyline-agents/core";
import { FileStateAdapter, LocalSandboxAdapter } from "@assemblyline-agents/local";
import { OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, resolveLogicalPath } from "@assemblyline-agents/runtime";
import { agentFolder } from "../kernel/test/support/agent-folder.js";
import { type CompletedOutcome, probeHarness } from "../kernel/test/support/probe-harness.js";

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "fs-agent", model: "test/m" });\n`;

/** A sandbox adapter that counts acquisitions, around the real local one. */
function countingSandbox(root: string): SandboxAdapter & { acquired: string[] } {
  const inner = new LocalSandboxAdapter({ root });
  const acquired: string[] = [];
  return { name: inner.name, acquired, acquire: (key) => (acquired.push(key), inner.acquire(key)), release: (key) => inner.release(key) };
}

const sandboxRoots: string[] = [];
afterAll(() => {
  for (const root of sandboxRoots.splice(0)) rmSync(root, { recursive: true, force: true });
});

async function runCalls(calls: Array<{ name: string; input: JsonValue }>, files: Record<string, string> = {}) {
  const dir = agentFolder({ "agent.ts": AGENT, ...files });
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const sandboxRoot = mkdtempSync(join(tmpdir(), "al-sandboxes-"));
  sandboxRoots.push(sandboxRoot);
  const sandbox = countingSandbox(sandboxRoot);
  const harness = probeHarness([{ toolCalls: calls }, { text: "done" }]);
  const state = await FileStateAdapter.open({ directory: join(dir, ".assembly-line", "state") });
  const runtime = new OpenEveRuntime({ ...bundle, state, sandbox, agentHarness: harness, logger: noopLogger() });
  const result = await runtime.run({ message: "go", conversationId: "c1" });
  await runtime.close();
  const outputs = harness.log.outcomes.map((entry) => entry.outcome);
  return { result, outputs, sandbox, sandboxRoot, dir };
}

describe("the runtime filesystem", () => {
  it("offers the file tools and bash when a sandbox backs /workspace, and bash starts in the workspace", async () => {
    const { result, outputs } = await runCalls([
      { name: "write", input: { path: "/workspace/report.txt", content: "line one\nline two" } },
      { name: "bash", input: { command: "pwd && cat report.txt && echo oops >&2 && exit 3" } },
      { name: "edit", input: { path: "/workspace/report.txt", oldText: "two", newText: "2" } },
      { name: "read", input: { path: "/workspace/report.txt" } },
      { name: "grep", input: { pattern: "line", path: "/workspace" } },
      { name: "list", input: { path: "/workspace" } },
      { name: "delete", input: { path: "/workspace/report.txt" } },
    ]);
    expect(result.status).toBe("completed");
    const [write, bash, edit, read, grep, list, remove] = outputs as Array<{ output: Record<string, unknown> }>;
    expect(write!.output).toEqual({ path: "/workspace/report.txt", bytes: 17 });
    expect(bash!.output).toMatchObject({ exitCode: 3, stderr: "oops\n", timedOut: false });
    expect(String(bash!.output.stdout)).toMatch(/workspace\nline one\nline two$/);
    expect(edit!.output).toEqual({ path: "/workspace/report.txt", replaced: 1 });
    expect(read!.output).toEqual({ path: "/workspace/report.txt", content: "line one\nline 2" });
    expect(grep!.output).toEqual({ matches: ["/workspace/report.txt:1:line one", "/workspace/report.txt:2:line 2"], truncated: false });
    expect((list!.output.entries as Array<{ path: string }>).map((entry) => entry.path)).toEqual(["/workspace/report.txt"]);
    expect(remove!.output).toEqual({ path: "/workspace/report.txt", deleted: true });
  });

  it("reads /memory, /history and /skills, and writes /memory durably", async () => {
    const { outputs } = await runCalls(
      [
        { name: "write", input: { path: "/memory/notes/a.md", content: "remember" } },
        { name: "read", input: { path: "/memory/notes/a.md" } },
        { name: "list", input: { path: "/skills" } },
        { name: "read", input: { path: "/skills/triage/SKILL.md" } },
        { name: "list", input: { path: "/history" } },
      ],
      { "skills/triage/SKILL.md": "---\ndescription: Triage.\n---\nSort by urgency." },
    );
    const values = outputs.map((outcome) => (outcome as { output: unknown }).output);
    expect(values[1]).toEqual({ path: "/memory/notes/a.md", content: "remember" });
    expect(values[2]).toEqual({ entries: [{ path: "/skills/triage/SKILL.md", type: "file", size: 45 }], truncated: false });
    expect(values[3]).toEqual({ path: "/skills/triage/SKILL.md", content: "---\ndescription: Triage.\n---\nSort by urgency." });
    expect(values[4]).toMatchObject({ entries: [{ path: "/history/conversation.md" }] });
  });

  it("refuses every path escape and every write to a read-only root with an error the model can correct", async () => {
    const refusals: Array<[string, JsonValue, RegExp]> = [
      ["read", { path: "/workspace/../../etc/passwd" }, /AL_ERR_PATH_ESCAPE.*'\.\.'/],
      ["read", { path: "/etc/passwd" }, /AL_ERR_PATH_ESCAPE.*not under a runtime root/],
      ["read", { path: "workspace/x" }, /AL_ERR_PATH_ESCAPE.*relative/],
      ["read", { path: "/memory/../workspace/x" }, /AL_ERR_PATH_ESCAPE/],
      ["read", { path: "/workspace/a\u0000b" }, /AL_ERR_PATH_ESCAPE.*NUL/],
      ["write", { path: "/history/conversation.md", content: "x" }, /AL_ERR_PATH_READ_ONLY.*\/history/],
      ["write", { path: "/files/upload.txt", content: "x" }, /AL_ERR_PATH_READ_ONLY.*\/files/],
      // Without selfImprovement.writable, skills are manifest-only.
      ["delete", { path: "/skills/triage/SKILL.md" }, /AL_ERR_SKILL_READ_ONLY.*\/skills\/triage\/SKILL\.md/],
      ["edit", { path: "/skills/triage/SKILL.md", oldText: "a", newText: "b" }, /AL_ERR_PATH_NOT_FOUND|AL_ERR_SKILL_READ_ONLY/],
    ];
    for (const [name, input, pattern] of refusals) {
      const { result, outputs } = await runCalls([{ name, input }]);
      const where = `${name} ${JSON.stringify(input)}`;
      expect(result.status, where).toBe("completed");
      expect(outputs[0], where).toMatchObject({ status: "completed", isError: true });
      expect(JSON.stringify(outputs[0]), where).toMatch(pattern);
    }
  });

  it("refuses a symlink inside the workspace that points out of it", async () => {
    const { outputs } = await runCalls([
      { name: "bash", input: { command: "ln -s / escape && ls escape/etc >/dev/null && echo linked" } },
      { name: "read", input: { path: "/workspace/escape/etc/hostname" } },
    ]);
    expect((outputs[0] as CompletedOutcome<{ stdout: string }>).output.stdout).toBe("linked\n");
    expect(JSON.stringify(outputs[1])).toMatch(/AL_ERR_PATH_ESCAPE/);
  });

  it("never creates a sandbox for a run that does not touch /workspace or bash", async () => {
    const quiet = await runCalls([
      { name: "write", input: { path: "/memory/a.md", content: "x" } },
      { name: "list", input: { path: "/memory" } },
    ]);
    expect(quiet.result.status).toBe("completed");
    expect(quiet.sandbox.acquired).toEqual([]);
    expect(existsSync(join(quiet.sandboxRoot, quiet.result.runId))).toBe(false);

    const busy = await runCalls([{ name: "bash", input: { command: "true" } }, { name: "bash", input: { command: "true" } }]);
    expect(busy.sandbox.acquired).toEqual([busy.result.runId]);
  });

  it("splits logical paths by root", () => {
    expect(resolveLogicalPath("/workspace/a/b.txt")).toEqual({ root: "/workspace", relative: "a/b.txt", path: "/workspace/a/b.txt" });
    expect(resolveLogicalPath("/memory")).toEqual({ root: "/memory", relative: "", path: "/memory" });
    expect(() => resolveLogicalPath("/workspacex/a")).toThrow(/not under a runtime root/);
    void symlinkSync;
  });
});
