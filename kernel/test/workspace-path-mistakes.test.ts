import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalSandboxAdapter } from "@assemblyline-agents/local";
import type { JsonValue } from "@assemblyline-agents/core";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { outputOf } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** One model turn making `calls` against a local sandbox, then a closing answer: the run's status and each call's result. */
async function runCalls(calls: Array<{ name: string; input: JsonValue }>) {
  const root = mkdtempSync(join(tmpdir(), "al-workspace-mistakes-"));
  roots.push(root);
  const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: calls }, { text: "done" }], { sandbox: new LocalSandboxAdapter({ root }) });
  const result = await runtime.run({ message: "go" });
  return { status: result.status, outputs: log.outcomes.map((entry) => outputOf(entry.outcome)) };
}

describe("a model's /workspace path mistake comes back as a result it can correct, and the run goes on", () => {
  it("read of a folder", async () => {
    const { status, outputs } = await runCalls([
      { name: "write", input: { path: "/workspace/out/a.txt", content: "x" } },
      { name: "read", input: { path: "/workspace/out" } },
    ]);
    expect(outputs[1]).toEqual({ code: "AL_ERR_PATH_NOT_FOUND", error: expect.stringContaining("cannot read /workspace/out: it is a folder") });
    expect(status).toBe("completed");
  });

  it("write over a folder", async () => {
    const { status, outputs } = await runCalls([
      { name: "write", input: { path: "/workspace/out/a.txt", content: "x" } },
      { name: "write", input: { path: "/workspace/out", content: "y" } },
      { name: "read", input: { path: "/workspace/out/a.txt" } },
    ]);
    expect(outputs[1]).toEqual({ code: "AL_ERR_PATH_NOT_FOUND", error: expect.stringContaining("cannot write /workspace/out: it is a folder") });
    expect(outputs[2]).toEqual({ path: "/workspace/out/a.txt", content: "x" });
    expect(status).toBe("completed");
  });

  it("write below a file, as if it were a folder", async () => {
    const { status, outputs } = await runCalls([
      { name: "write", input: { path: "/workspace/a.txt", content: "x" } },
      { name: "write", input: { path: "/workspace/a.txt/b.txt", content: "y" } },
    ]);
    expect(outputs[1]).toEqual({ code: "AL_ERR_PATH_NOT_FOUND", error: expect.stringContaining("a file stands where a folder is needed") });
    expect(status).toBe("completed");
  });

  it("a name longer than the filesystem allows", async () => {
    const { status, outputs } = await runCalls([{ name: "write", input: { path: `/workspace/${"n".repeat(300)}.txt`, content: "y" } }]);
    expect(outputs[0]).toEqual({ code: "AL_ERR_PATH_TOO_LONG", error: expect.stringContaining("a name in the path is too long") });
    expect(status).toBe("completed");
  });
});
