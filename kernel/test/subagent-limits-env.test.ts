import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startBuilt } from "./support/runtime.js";
import { agentFolder } from "./support/agent-folder.js";

// An operator sets the subagent limits in the environment; 0 turns subagents off, as
// RuntimeOptions.subagents allows.

function spawningAgent(): string {
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname });
`,
    "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks facts up." });
`,
  });
  const script = {
    turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "look it up" } }] }, { text: "done" }],
    subagents: { researcher: { turns: [{ text: "found" }] } },
  };
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  return dir;
}

async function spawnOutput(env: Record<string, string>, options: { subagents?: { maxDepth?: number; maxSpawnsPerRun?: number } } = {}): Promise<unknown> {
  const { runtime, state } = await startBuilt(spawningAgent(), { env, ...options });
  const result = await runtime.run({ message: "go" });
  expect(result.status).toBe("completed");
  return (await state.listToolCalls(result.runId))[0]?.output;
}

describe("subagent limits from the environment", () => {
  it("refuses every spawn with ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH=0 or ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS=0", async () => {
    expect(await spawnOutput({ ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH: "0" })).toMatchObject({ code: "AL_ERR_SUBAGENT_LIMIT", error: expect.stringContaining("the limit is 0") });
    expect(await spawnOutput({ ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS: "0" })).toMatchObject({ code: "AL_ERR_SUBAGENT_LIMIT", error: expect.stringContaining("the limit is 0") });
  });

  it("lets RuntimeOptions.subagents win over the environment", async () => {
    expect(await spawnOutput({ ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH: "0" }, { subagents: { maxDepth: 1 } })).toMatchObject({ output: "found" });
  });

  it("refuses a value that is not a whole number of 0 or more, naming the variable", async () => {
    for (const [name, value] of [["ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH", "-1"], ["ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS", "1.5"], ["ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS", "many"]] as const) {
      await expect(startBuilt(spawningAgent(), { env: { [name]: value } })).rejects.toThrow(`${name}=${value} must be a non-negative integer`);
    }
  });
});
