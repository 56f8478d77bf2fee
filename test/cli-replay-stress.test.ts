import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
const workDir = mkdtempSync(join(tmpdir(), "al-cli-stress-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

async function cli(args: string[]) {
  return promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error" } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

describe("assembly-line test --replay-stress", () => {
  it("passes the gateway example", async () => {
    // In place: its gateway.ts imports a workspace package. The stress keeps its state in memory.
    const dir = join(root, "examples/gateway-agent");
    const result = await cli(["test", dir, "--conversation", join(dir, "conversations/greet-ada.json"), "--replay-stress"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/replay-safe: the run ended completed the same way after a stop at each of its \d+ boundaries/);
  });

  it("fails on a tool that appends without an idempotency key, naming the boundary and the repeated write", async () => {
    const dir = join(workDir, "unsafe-agent");
    mkdirSync(join(dir, "tools"), { recursive: true });
    writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "scripted:unused", instructions: "Log visits.", defaultTools: ["log_visit"] });\n`);
    writeFileSync(
      join(dir, "tools/log_visit.ts"),
      `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Log a visit.",
  inputSchema: { type: "object", properties: { who: { type: "string" } }, required: ["who"] },
  async execute(input, ctx) {
    await ctx.memory.write({ path: "visits/" + Date.now() + "-" + Math.random().toString(36).slice(2) + ".txt", content: input.who });
    return { logged: true };
  },
});
`,
    );
    const script = join(dir, "visit.json");
    writeFileSync(script, JSON.stringify({ turns: [{ toolCalls: [{ name: "log_visit", input: { who: "ada" } }] }, { text: "Logged." }] }));
    const result = await cli(["test", dir, "--conversation", script, "--replay-stress"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/boundary \d+ \(after writeMemory visits\/[\w.-]+\.txt\): side_effect_repeated: memory "ada" was written 2 times/);
    expect(result.stdout).toMatch(/problem\(s\) at \d+ of \d+ boundaries/);

    const usage = await cli(["test", dir, "--conversation", script]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--replay-stress/);
  });

  it("fails when the recorded run itself failed, instead of calling it replay-safe", async () => {
    const dir = join(workDir, "failing-agent");
    mkdirSync(join(dir, "tools"), { recursive: true });
    writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "scripted:unused", instructions: "Explode.", defaultTools: ["explode"] });\n`);
    writeFileSync(join(dir, "tools/explode.ts"), `import { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "Always fails.", inputSchema: { type: "object", properties: {} }, async execute() { throw new Error("boom"); } });\n`);
    writeFileSync(join(dir, "explode.json"), JSON.stringify({ turns: [{ toolCalls: [{ name: "explode", input: {} }] }, { text: "unreachable" }] }));
    const result = await cli(["test", dir, "--conversation", join(dir, "explode.json"), "--replay-stress"]);
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stdout).not.toContain("replay-safe");
    expect(result.stderr).toContain("the recorded run failed");
    const json = await cli(["test", dir, "--conversation", join(dir, "explode.json"), "--replay-stress", "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).data.recorded.status).toBe("failed");
  }, 60_000);
});
