import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import type { ToolExecutionContext } from "@assemblyline-agents/core";
import { LocalSandboxAdapter } from "@assemblyline-agents/local";
import { builtInToolDefaults } from "@assemblyline-agents/runtime";

type BashResult = { exitCode: number; stdout: string; stderr: string; truncated: boolean };

/** The bash tool's result for `command` in a local sandbox made with `options`. */
async function bashIn(options: { maxOutputBytes?: number }, command: string): Promise<BashResult> {
  const root = mkdtempSync(join(tmpdir(), "al-bash-cap-"));
  onTestFinished(() => rmSync(root, { recursive: true, force: true }));
  const adapter = new LocalSandboxAdapter({ root, ...options });
  onTestFinished(() => adapter.release("run-1"));
  const sandbox = await adapter.acquire("run-1");
  const ctx = { runId: "run-1", toolCallId: "call-1", getSandbox: async () => sandbox } as unknown as ToolExecutionContext;
  return (await builtInToolDefaults.bash.execute({ command }, ctx)) as BashResult;
}

describe("the bash tool's output cap", () => {
  it("keeps no more of each stream than the sandbox's own maxOutputBytes when it is below 64 KiB", async () => {
    const result = await bashIn({ maxOutputBytes: 100 }, "head -c 1000 /dev/zero | tr '\\0' o; head -c 1000 /dev/zero | tr '\\0' e >&2");
    expect(result).toMatchObject({ exitCode: 0, stdout: "o".repeat(100), stderr: "e".repeat(100), truncated: true });
  });

  it("keeps 64 KiB of each stream when the sandbox would keep more (the local sandbox's 1 MiB default)", async () => {
    const result = await bashIn({}, "head -c 100000 /dev/zero | tr '\\0' o");
    expect(result).toMatchObject({ exitCode: 0, truncated: true });
    expect(result.stdout).toBe("o".repeat(64 * 1024));
  });

  it("hands over output under the sandbox's cap whole", async () => {
    expect(await bashIn({ maxOutputBytes: 100 }, "printf 0123456789")).toMatchObject({ exitCode: 0, stdout: "0123456789", truncated: false });
  });
});
