import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../plugins/node/src/cli/main.js";

// A parent whose subagents, spawned together, both wait: what the command line shows of it and how it continues it.

const work = mkdtempSync(join(tmpdir(), "al-cli-subagents-waiting-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (line) => void out.push(line), err: (line) => void err.push(line), errChunk: (text) => void err.push(text) });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

const tool = (execute: string, extra = "") => `import { defineTool, approvalRequired } from "@assemblyline-agents/core";
export default defineTool({
  description: "A probe.",
  defaultEnabled: true,
  inputSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"] },
  ${extra}
  async execute(input, ctx) { ${execute} },
});
`;

let agent: string;
let model: string;

beforeAll(async () => {
  agent = join(work, "coordinator");
  const files: Record<string, string> = {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "coordinator", model: "scripted:unused", instructions: "Coordinate." });\n`,
    // docs/subagents.md's research_all: one child per topic, started together.
    "tools/research_all.ts": tool(`return Promise.all(input.value.split(",").map((topic) => ctx.spawnSubagent({ name: "researcher", task: "Find " + topic })));`),
    "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Looks things up.", instructions: "Research." });\n`,
    "subagents/researcher/tools/lookup.ts": tool("return { found: input.value };", `needsApproval: approvalRequired("Billed."),`),
    "script.json": JSON.stringify({
      turns: [{ toolCalls: [{ name: "research_all", input: { value: "a,b" } }] }, { text: "parent done" }],
      subagents: { researcher: { turns: [{ toolCalls: [{ name: "lookup", input: { value: "x" } }] }, { text: "found" }] } },
    }),
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(agent, file)), { recursive: true });
    writeFileSync(join(agent, file), text);
  }
  model = `scripted:${join(agent, "script.json")}`;
  expect((await cli(["build", agent])).code).toBe(0);
}, 120_000);

describe("a parent run whose two subagents wait for approval", () => {
  it("prints each child's call with a command that decides that call only, and completes once both are approved", async () => {
    const ran = await cli(["run", agent, "-m", "go", "--model", model]);
    const runId = /run (\S+) waits for approval/.exec(ran.stdout)![1]!;
    // The children pause together; the second may record its pause just after the parent's.
    let shown = await cli(["runs", "show", runId, "--agent", agent]);
    for (let tries = 0; shown.stdout.split("approve: npx").length < 3 && tries < 50; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      shown = await cli(["runs", "show", runId, "--agent", agent]);
    }
    const waiting = [...shown.stdout.matchAll(/waits for approval of lookup \{"value":"x"\} \(call call_0_0\) in subagent researcher \(run (\S+)\)/g)].map((match) => match[1]);
    expect(new Set(waiting).size).toBe(2);
    // Both calls are call_0_0: the command names each by its approval id instead.
    const approvals = [...shown.stdout.matchAll(/approve: npx assembly-line approve (\S+) (\S+) --agent/g)].map((match) => ({ runId: match[1], id: match[2] }));
    expect(approvals).toHaveLength(2);
    expect(approvals.every((approval) => approval.runId === runId && approval.id!.startsWith("appr_"))).toBe(true);
    expect((await cli(["approve", runId, approvals[0]!.id!, "--agent", agent])).code).toBe(3);
    const done = await cli(["approve", runId, approvals[1]!.id!, "--agent", agent, "--json"]);
    expect(JSON.parse(done.stdout).data.result).toMatchObject({ runId, status: "completed", response: { text: "parent done" } });
  });

  it("approves both with run --approve all", async () => {
    const ran = await cli(["run", agent, "-m", "go", "--model", model, "--approve", "all", "--json"]);
    expect(JSON.parse(ran.stdout).data.result).toMatchObject({ status: "completed", response: { text: "parent done" } });
  });
});
