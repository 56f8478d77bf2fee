import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import { describe, expect, it, vi } from "vitest";
import { buildAgent, loadRuntimeBundle, noopLogger, OpenEveRuntime, InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { probeHarness } from "./support/probe-harness.js";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startBuilt } from "./support/runtime.js";

/**
 * Schemas reach one process from many builds, agents and models: a `$id` one of them carries must not
 * refuse the next schema with that id, and a schema compiled once must not stay in memory for good.
 */
const schemaWithId = `{ $id: "https://example.com/schemas/note-input", type: "object", properties: { value: { type: "string" } }, required: ["value"] }`;

describe("tool inputSchema with $id", () => {
  it("builds again after the tool changes (dev rebuild in one process)", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/note.ts": toolSource({ upFront: true, schema: schemaWithId }) });
    await buildAgent(dir);
    writeFileSync(join(dir, "tools/note.ts"), toolSource({ upFront: true, schema: schemaWithId, execute: "return { echoed: input.value, v: 2 };" }));
    await expect(buildAgent(dir)).resolves.toBeDefined();
  });

  it("two agents in one process may each have a tool whose schema has the same $id", async () => {
    const a = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/note.ts": toolSource({ upFront: true, schema: schemaWithId }) });
    const b = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/note.ts": toolSource({ upFront: true, schema: schemaWithId, execute: "return { other: input.value };" }) });
    // Each folder built in its own process (as `assembly-line build` does); the host then serves both.
    const roots = [a, b].map((dir) => JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", `const { buildAgent } = await import("@assemblyline-agents/runtime"); const r = await buildAgent(${JSON.stringify(dir)}); console.log(JSON.stringify(r.artifactRoot));`], { cwd: process.cwd(), encoding: "utf8" }).trim().split("\n").at(-1)!) as string);
    const open = async (root: string, value: string) => {
      const bundle = await loadRuntimeBundle(root);
      return new OpenEveRuntime({ ...bundle, state: new InMemoryStateAdapter(), agentHarness: probeHarness([{ toolCalls: [{ name: "note", input: { value } }] }, { text: "done" }]), logger: noopLogger() });
    };
    const first = await open(roots[0]!, "x");
    expect((await first.run({ message: "go" })).status).toBe("completed");
    const second = await open(roots[1]!, "y");
    const result = await second.run({ message: "go" }).catch((error: Error) => ({ status: `threw: ${error.message}` }));
    expect(result).toMatchObject({ status: "completed" });
  });
});

function agent(script: object, extra: Record<string, string> = {}) {
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname });
`,
    "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks facts up." });
`,
    "subagents/researcher/instructions.md": "You research facts.",
    ...extra,
  });
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  return dir;
}

const schema = (id?: string) => ({ ...(id ? { $id: id } : {}), type: "object", properties: { fact: { type: "string" } }, required: ["fact"] });
const spawn = (id?: string) => ({ toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "What is the answer?", expectedOutput: schema(id) } }] });

describe("spawn_subagent expectedOutput schemas", () => {
  it("a model may pass the same expectedOutput schema (with $id) on two spawns", async () => {
    const dir = agent({
      turns: [spawn("https://example.com/fact"), spawn("https://example.com/fact"), { text: "done" }],
      subagents: { researcher: { turns: [{ text: '{"fact": "42"}' }, { text: '{"fact": "43"}' }] } },
    });
    const { runtime } = await startBuilt(dir);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const completed = (await runtime.listEvents(result.runId)).filter((e) => e.type === "tool.completed").map((e) => e.data.output);
    // Each spawn's child answers with the fact its schema asks for; neither is refused as a second "$id".
    expect(completed).toMatchObject([{ output: { fact: expect.any(String) } }, { output: { fact: expect.any(String) } }]);
    expect(JSON.stringify(completed)).not.toContain("AL_ERR_SUBAGENT_OUTPUT");
  });

  it("one spawn with a $id schema whose child waits for an approval finishes once approved", async () => {
    const dir = agent(
      {
        turns: [spawn("https://example.com/fact"), { text: "done" }],
        subagents: { researcher: { turns: [{ toolCalls: [{ name: "lookup", input: { value: "x" } }] }, { text: '{"fact": "42"}' }] } },
      },
      {
        "subagents/researcher/tools/lookup.ts": `import { defineTool, approvalRequired } from "@assemblyline-agents/core";
export default defineTool({ description: "Look up.", defaultEnabled: true, inputSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"] },
  needsApproval: approvalRequired("billed"), async execute(input) { return { found: input.value }; } });
`,
      },
    );
    const { runtime } = await startBuilt(dir);
    const paused = await runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    const pending = paused.pendingApprovals?.[0];
    const childRunId = (pending as { runId?: string } | undefined)?.runId ?? paused.runId;
    await runtime.approve(childRunId);
    const parent = await runtime.getRun(paused.runId);
    const completed = (await runtime.listEvents(paused.runId)).filter((e) => e.type === "tool.completed").map((e) => e.data.output);
    // The parent repeats the spawn on resume: its schema is compiled a second time.
    expect({ status: parent?.status, completed }).toMatchObject({ status: "completed", completed: [{ output: { fact: "42" } }] });
  });

  it("does not keep every model-sent expectedOutput schema compiled for the life of the process", async () => {
    const instances = new Set<Ajv>();
    const compile = vi.spyOn(Ajv.prototype, "compile").mockImplementation(function (this: Ajv, ...args: Parameters<Ajv["compile"]>) {
      instances.add(this);
      return originalCompile.apply(this, args);
    } as never);
    const cacheSize = () => [...instances].reduce((sum, ajv) => sum + (ajv as unknown as { _cache: Map<unknown, unknown> })._cache.size, 0);
    try {
      const spawns = 20;
      const dir = agent({
        turns: [...Array.from({ length: spawns }, () => spawn()), { text: "done" }],
        subagents: { researcher: { turns: Array.from({ length: spawns }, (_, i) => ({ text: `{"fact": "${i}"}` })) } },
      });
      const { runtime } = await startBuilt(dir);
      const before = cacheSize();
      const result = await runtime.run({ message: "go" });
      expect(result.status).toBe("completed");
      expect(cacheSize() - before).toBeLessThan(spawns);
    } finally {
      compile.mockRestore();
    }
  });
});
const originalCompile = Ajv.prototype.compile;
