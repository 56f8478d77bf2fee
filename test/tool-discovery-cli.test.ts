import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { writeFiles } from "../kernel/test/support/agent-folder.js";
import { DEFERRED_TOOLS, VISIBLE_TOOLS, discoveryAgentFiles } from "../kernel/test/support/discovery-agent.js";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
const scratch = mkdtempSync(join(tmpdir(), "al-discovery-cli-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function cli(args: string[]) {
  return promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error" } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

describe("deferred tool discovery from the command line", () => {
  it("searches, describes and calls a deferred tool that needs approval; approved in another process, the call runs once", async () => {
    const agent = join(scratch, "discovery-agent");
    const executionLog = join(scratch, "refunds.log");
    writeFileSync(executionLog, "");
    writeFiles(agent, {
      ...discoveryAgentFiles({ executionLog }),
      // The CLI checks a static model against the engine's catalog; the script replaces it per run.
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "openai/gpt-5.4-mini", instructions: "You run billing." });\n`,
    });
    const script = join(scratch, "script.json");
    const refund = { id: "inv_7", amount: 40 };
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          { toolCalls: [{ name: "tool_search", input: { query: "refund" } }] },
          { toolCalls: [{ name: "tool_describe", input: { name: "refund_payment" } }] },
          { toolCalls: [{ name: "tool_call", input: { name: "refund_payment", input: refund } }] },
          { text: "Refunded inv_7." },
        ],
      }),
    );

    const paused = await cli(["run", agent, "--message", "Refund inv_7", "--model", `scripted:${script}`, "--json"]);
    expect(paused.stderr).toBe("");
    expect(paused.code).toBe(3);
    const result = JSON.parse(paused.stdout).data.result;
    expect(result.status).toBe("waiting_approval");
    expect(result.pendingApprovals[0]).toMatchObject({ toolName: "refund_payment" });
    expect(readFileSync(executionLog, "utf8")).toBe("");

    const approved = await cli(["approve", result.runId, result.pendingApprovals[0].callId, "--agent", agent]);
    expect(approved.code).toBe(0);
    expect(approved.stdout.trim().split("\n").at(-1)).toBe("Refunded inv_7.");
    expect(readFileSync(executionLog, "utf8")).toBe(`${result.pendingApprovals[0].callId}\n`);

    const shown = await cli(["runs", "show", result.runId, "--agent", agent, "--json"]);
    const { events } = JSON.parse(shown.stdout).data as { events: Array<{ type: string; data: Record<string, unknown> }> };
    // The recorded model input: what each model call was offered.
    const offered = events.filter((event) => event.type === "model.response").map((event) => event.data.offeredTools as string[]);
    expect(offered).toHaveLength(4);
    expect(offered[0]).toEqual(expect.arrayContaining([...VISIBLE_TOOLS, "ask_question", "read", "bash", "tool_search", "tool_describe", "tool_call"]));
    expect(offered[0]!.filter((name) => DEFERRED_TOOLS.includes(name))).toEqual([]);
    expect(offered[0]).toHaveLength(VISIBLE_TOOLS.length + 11);
    expect(offered[2]).toContain("refund_payment");
    expect(offered[3]).toContain("refund_payment");
    const search = events.find((event) => event.type === "tool.completed" && event.data.toolName === "tool_search")!;
    expect((search.data.output as { results: Array<{ name: string }> }).results[0]!.name).toBe("refund_payment");
    expect(events.filter((event) => event.type === "approval.requested")).toEqual([expect.objectContaining({ data: expect.objectContaining({ toolName: "refund_payment", via: "tool_call", input: refund }) })]);
    expect(events.filter((event) => event.type === "tool.completed" && event.data.toolName === "refund_payment")).toHaveLength(1);
  }, 120_000);
});
