import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { AgentHarness } from "@assemblyline-agents/core";
import { buildAgent } from "@assemblyline-agents/runtime";
import { startBuilt } from "./support/runtime.js";
import { agentFolder, toolSource } from "./support/agent-folder.js";

/** A parent with one subagent laid out the way eve lays one out. */
function researchAgent(script: object, extra: Record<string, string> = {}) {
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname });
`,
    "instructions.md": "You coordinate research.",
    "tools/summarize.ts": toolSource({ upFront: true, execute: `return { summary: input.value.toUpperCase() };` }),
    "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks facts up in the archive.", tools: ["summarize"] });
`,
    "subagents/researcher/instructions.md": "You research facts.",
    "subagents/researcher/tools/lookup.ts": toolSource({
      upFront: true,
      extra: `needsApproval: approvalRequired("The archive is billed per lookup."),`,
      execute: `globalThis.__lookups = (globalThis.__lookups ?? 0) + 1; return { fact: "42 is the answer to " + input.value };`,
    }),
    "subagents/researcher/skills/citing/SKILL.md": "---\ndescription: How to cite archive facts.\n---\nCite the archive id.\n",
    "subagents/researcher/skills/citing/references/format.md": "[archive:id]",
    ...extra,
  });
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  return dir;
}

const start = startBuilt;

const SPAWN_AND_FINISH = {
  turns: [
    { toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "What is the answer?", expectedOutput: { type: "object", properties: { fact: { type: "string" } }, required: ["fact"] } } }] },
    { text: "The researcher reported back." },
  ],
  subagents: {
    researcher: {
      turns: [
        { toolCalls: [{ name: "load_skill", input: { name: "citing" } }] },
        { toolCalls: [{ name: "lookup", input: { value: "everything" } }] },
        { text: '{"fact": "42 [archive:7]"}' },
      ],
    },
  },
};

describe("subagents", () => {
  it("compiles a nested eve-style folder: description, instructions.md, own tools and skills, narrowed parent tools", async () => {
    const { manifest } = await buildAgent(researchAgent(SPAWN_AND_FINISH));
    expect(manifest.agent.instructions).toBe("You coordinate research.");
    const [researcher] = manifest.subagents;
    expect(researcher).toMatchObject({
      name: "researcher",
      dir: "subagents/researcher",
      description: "Looks facts up in the archive.",
      instructions: "You research facts.",
      model: manifest.agent.model,
      inheritedTools: ["summarize"],
      workspace: "shared",
    });
    expect(researcher!.tools.map((tool) => [tool.name, tool.source.file])).toEqual([["lookup", "subagents/researcher/tools/lookup.ts"]]);
    expect(researcher!.skills.map((skill) => skill.name)).toEqual(["citing"]);
    expect(manifest.sources.map((source) => source.file)).toEqual(
      expect.arrayContaining(["instructions.md", "subagents/researcher/instructions.md", "subagents/researcher/skills/citing/SKILL.md"]),
    );
  });

  it("refuses a subagent without a description, one that widens its parent, and instructions given twice", async () => {
    await expect(buildAgent(researchAgent(SPAWN_AND_FINISH, { "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({} as never);` }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_DEFINITION",
      message: expect.stringContaining("subagents/researcher/: agent.ts has no description"),
    });
    await expect(buildAgent(researchAgent(SPAWN_AND_FINISH, { "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "d", tools: ["billing"] });` }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_NARROWING",
      message: expect.stringContaining('names tool "billing" that the parent lacks'),
    });
    // The host may declare a connection the build cannot see: the runtime's start refuses one no one declares.
    await expect(start(researchAgent(SPAWN_AND_FINISH, { "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "d", connections: ["crm"] });` }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_NARROWING",
    });
    await expect(buildAgent(researchAgent(SPAWN_AND_FINISH, { "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "d", model: "openai/gpt-5.4-mini" });` }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_NARROWING",
      message: expect.stringContaining("is not of the parent's provider (scripted)"),
    });
    await expect(buildAgent(researchAgent(SPAWN_AND_FINISH, { "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "d", instructions: "inline" });` }))).rejects.toMatchObject({
      code: "AL_ERR_AGENT_INSTRUCTIONS_TWICE",
      message: expect.stringContaining("subagents/researcher/instructions.md"),
    });
  });

  it("surfaces the child's approval on the parent; approving the parent's pending call resumes the child, then the parent", async () => {
    (globalThis as { __lookups?: number }).__lookups = 0;
    const { runtime, state } = await start(researchAgent(SPAWN_AND_FINISH));
    const paused = await runtime.run({ message: "research", conversationId: "c1" });
    expect(paused.status).toBe("waiting_approval");
    expect(paused.waitingOn).toMatchObject({ subagent: "researcher" });
    expect(paused.pendingApprovals).toEqual([expect.objectContaining({ toolName: "lookup", subagent: "researcher", runId: paused.waitingOn!.runId })]);
    const childId = paused.waitingOn!.runId;
    const child = await state.getRun(childId);
    expect(child?.input.parent).toMatchObject({ runId: paused.runId, subagent: "researcher", depth: 1 });
    expect(child?.agentId).toBe(`${runtime.manifest.agent.id}/researcher`);

    const done = await runtime.approve(paused.runId, { callId: paused.pendingApprovals![0]!.callId });
    expect(done.status).toBe("completed");
    expect(done.response?.text).toBe("The researcher reported back.");
    expect((globalThis as { __lookups?: number }).__lookups).toBe(1);
    const parentEvents = await runtime.listEvents(paused.runId);
    const types = parentEvents.map((event) => event.type);
    expect(types.filter((type) => type === "subagent.started")).toHaveLength(1);
    expect(parentEvents.find((event) => event.type === "subagent.completed")?.data).toMatchObject({ childRunId: childId, status: "completed", output: { fact: "42 [archive:7]" } });
    const spawn = (await state.listToolCalls(paused.runId)).find((call) => call.toolName === "spawn_subagent");
    expect(spawn).toMatchObject({ status: "completed", output: { subagent: "researcher", runId: childId, output: { fact: "42 [archive:7]" } } });
    // The child ran with its own instructions, skills and tools: not the parent's.
    const childEvents = await runtime.listEvents(childId);
    expect(childEvents.find((event) => event.type === "run.started")?.data).toMatchObject({ instructions: "You research facts.", subagent: "researcher", parentRunId: paused.runId });
    expect(childEvents.map((event) => event.type)).toContain("skill.loaded");
  });

  it("approving the child run directly also completes the parent", async () => {
    const { runtime } = await start(researchAgent(SPAWN_AND_FINISH));
    const paused = await runtime.run({ message: "research" });
    const child = await runtime.approve(paused.waitingOn!.runId);
    expect(child.status).toBe("completed");
    expect((await runtime.getRun(paused.runId)).status).toBe("completed");
  });

  it("returns an output that breaks the expected schema to the parent as a recoverable error", async () => {
    const script = structuredClone(SPAWN_AND_FINISH);
    script.subagents.researcher.turns = [{ text: '{"fact": 42}' }] as never;
    const { runtime, state } = await start(researchAgent(script));
    const result = await runtime.run({ message: "research" });
    expect(result.status).toBe("completed");
    const spawn = (await state.listToolCalls(result.runId)).find((call) => call.toolName === "spawn_subagent");
    expect(spawn?.output).toMatchObject({ code: "AL_ERR_SUBAGENT_OUTPUT", error: expect.stringContaining("output/fact must be string") });
    const ended = (await state.listEvents(result.runId)).filter((event) => event.type === "subagent.completed");
    expect(ended.map((event) => event.data.status)).toEqual(["output_invalid"]);
  });

  it("shows the child's model the subagent's outputSchema when the spawn gives no schema, and checks the output against it", async () => {
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", instructions: "Coordinate." });\n`,
      "subagents/extractor/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Extracts a city.", instructions: "Extract.", outputSchema: ${JSON.stringify(schema)} });\n`,
    });
    /** The parent spawns "extractor" with `request`; the child answers in JSON and its first message is kept. */
    const spawnWith = async (request: Record<string, unknown>) => {
      const tasks: string[] = [];
      const harness: AgentHarness = {
        name: "recording",
        async runTurn(input, ctx) {
          if (input.subagent) {
            tasks.push(JSON.stringify(input.context.messages[0]?.content));
            return { status: "completed", response: { text: '{"city":"Paris"}' } };
          }
          const outcome = await ctx.callTool({ id: "call_0", name: "spawn_subagent", input: { name: "extractor", task: "Which city is the capital of France?", ...request } });
          return { status: "completed", response: { text: JSON.stringify(outcome.status === "paused" ? null : outcome.output) } };
        },
      };
      const { runtime } = await start(dir, { agentHarness: harness });
      const result = await runtime.run({ message: "go" });
      return { task: JSON.parse(tasks[0]!) as string, output: JSON.parse(result.response!.text) as unknown };
    };
    const shown = `Reply with JSON only, matching this JSON Schema:\n${JSON.stringify(schema)}`;
    const plain = await spawnWith({});
    expect(plain.task).toContain(shown);
    expect(plain.output).toMatchObject({ subagent: "extractor", output: { city: "Paris" } });
    // A description of the output is shown beside the schema the output must still match.
    const described = await spawnWith({ expectedOutput: "the city's name" });
    expect(described.task).toContain("Expected output: the city's name");
    expect(described.task).toContain(shown);
  });

  it("gives each spawn of one tool call its own child, in turn and at once, and finds the same children on a replay", async () => {
    const script = {
      turns: [{ toolCalls: [{ name: "delegate", input: { value: "x" } }] }, { text: "done" }],
      subagents: { researcher: { turns: [{ text: "R" }] }, writer: { turns: [{ text: "W" }] } },
    };
    const delegate = toolSource({
      upFront: true,
      execute: `const a = await ctx.spawnSubagent({ name: "researcher", task: "find" });
      const b = await ctx.spawnSubagent({ name: "writer", task: "write" });
      const [c, d] = await Promise.all([ctx.spawnSubagent({ name: "researcher", task: "again" }), ctx.spawnSubagent({ name: "writer", task: "again" })]);
      return [a, b, c, d].map((spawned) => [spawned.subagent, spawned.output, spawned.runId]);`,
    });
    const writer = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Writes things up." });
`;
    const { runtime, state } = await start(researchAgent(script, { "tools/delegate.ts": delegate, "subagents/writer/agent.ts": writer }));
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const call = (await state.listToolCalls(result.runId)).find((entry) => entry.toolName === "delegate")!;
    const spawned = call.output as Array<[string, string, string]>;
    const tasks = await Promise.all(spawned.map(async ([subagent, , runId]) => [subagent, (await state.getRun(runId))?.input.message]));
    expect(tasks).toEqual([
      ["researcher", "find"],
      ["writer", "write"],
      ["researcher", "again"],
      ["writer", "again"],
    ]);
    expect(new Set(spawned.map(([, , runId]) => runId)).size).toBe(4);
    const events = await state.listEvents(result.runId);
    expect(events.filter((event) => event.type === "subagent.started").map((event) => event.data.childRunId)).toEqual(expect.arrayContaining(spawned.map(([, , runId]) => runId)));
    expect(events.filter((event) => event.type === "subagent.completed")).toHaveLength(4);
  });

  it("refuses a blank task, and a replayed call whose spawn asks for another subagent than its child", async () => {
    const script = { turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: " \n " } }] }, { text: "done" }], subagents: { researcher: { turns: [{ text: "ok" }] } } };
    const { runtime, state } = await start(researchAgent(script));
    const result = await runtime.run({ message: "go" });
    const [blank] = await state.listToolCalls(result.runId);
    expect(JSON.stringify(blank?.output)).toMatch(/task/);

    // A tool that, run again once its paused child finished, asks for another subagent than its first run did.
    const fickle = toolSource({
      upFront: true,
      execute: `globalThis.__fickleRounds = (globalThis.__fickleRounds ?? 0) + 1;
      const name = globalThis.__fickleRounds === 1 ? "researcher" : "writer";
      try { return await ctx.spawnSubagent({ name, task: "look it up" }); } catch (error) { if (error.code === "AL_ERR_SUBAGENT_INPUT") return { code: error.code, message: error.message }; throw error; }`,
    });
    const writer = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Writes." });\n`;
    const replayScript = {
      turns: [{ toolCalls: [{ name: "fickle", input: { value: "x" } }] }, { text: "done" }],
      subagents: { researcher: { turns: [{ toolCalls: [{ name: "lookup", input: { value: "v" } }] }, { text: "found" }] }, writer: { turns: [{ text: "written" }] } },
    };
    (globalThis as { __fickleRounds?: number }).__fickleRounds = 0;
    const second = await start(researchAgent(replayScript, { "tools/fickle.ts": fickle, "subagents/writer/agent.ts": writer }));
    const paused = await second.runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    const done = await second.runtime.approve(paused.runId, { callId: paused.pendingApprovals![0]!.callId });
    expect(done.status).toBe("completed");
    const [call] = await second.state.listToolCalls(paused.runId);
    expect(call?.output).toMatchObject({ code: "AL_ERR_SUBAGENT_INPUT", message: expect.stringContaining("started subagent researcher") });
  });

  it("refuses a spawn request with a field it does not know or of the wrong type, naming the field, and spawns nothing", async () => {
    const attempts = [
      { name: "researcher", task: "find", expectedOuput: { type: "object" } },
      { name: "researcher", task: "find", constraints: "be brief" },
      { name: "researcher", task: "find", constraints: ["be brief", 3] },
      { name: "researcher", task: "find", expectedOutput: ["fact"] },
      { name: 7, task: "find" },
      { name: "researcher", task: "   " },
    ];
    const probe = toolSource({
      upFront: true,
      execute: `const refusals = [];
      for (const request of ${JSON.stringify(attempts)}) {
        try { await ctx.spawnSubagent(request); refusals.push("spawned"); } catch (error) { refusals.push(error.code + " " + error.message.split("\\n")[0]); }
      }
      return refusals;`,
    });
    const script = { turns: [{ toolCalls: [{ name: "probe", input: { value: "x" } }] }, { text: "done" }], subagents: { researcher: { turns: [{ text: "ok" }], loop: true } } };
    const { runtime, state } = await start(researchAgent(script, { "tools/probe.ts": probe }));
    const result = await runtime.run({ message: "go" });
    const [call] = await state.listToolCalls(result.runId);
    expect(call?.output).toEqual([
      "AL_ERR_SUBAGENT_INPUT AL_ERR_SUBAGENT_INPUT: spawnSubagent: unknown field expectedOuput",
      "AL_ERR_SUBAGENT_INPUT AL_ERR_SUBAGENT_INPUT: spawnSubagent: constraints must be a list of strings, not a string",
      "AL_ERR_SUBAGENT_INPUT AL_ERR_SUBAGENT_INPUT: spawnSubagent: constraints must be a list of strings, not a list",
      "AL_ERR_SUBAGENT_INPUT AL_ERR_SUBAGENT_INPUT: spawnSubagent: expectedOutput must be a JSON Schema object or a text description, not a list",
      "AL_ERR_SUBAGENT_INPUT AL_ERR_SUBAGENT_INPUT: spawnSubagent: name must be a string, not a number",
      "AL_ERR_SUBAGENT_INPUT AL_ERR_SUBAGENT_INPUT: spawnSubagent: task is blank",
    ]);
    expect((await state.listEvents(result.runId)).filter((event) => event.type === "subagent.started")).toEqual([]);
  });

  it("refuses RuntimeOptions.subagents with a misspelt key, or a limit that is not a whole number of 0 or more, naming the option", async () => {
    const dir = researchAgent({ turns: [{ text: "done" }] });
    await expect(start(dir, { subagents: { maxSpawnPerRun: 1 } as never })).rejects.toThrow("RuntimeOptions.subagents has unknown key maxSpawnPerRun; use maxDepth, maxSpawnsPerRun");
    await expect(start(dir, { subagents: { maxSpawnsPerRun: Number.NaN } })).rejects.toThrow("RuntimeOptions.subagents.maxSpawnsPerRun is NaN; give a whole number, 0 or more (default 16)");
    await expect(start(dir, { subagents: { maxDepth: -5 } })).rejects.toThrow("RuntimeOptions.subagents.maxDepth is -5; give a whole number, 0 or more (default 3)");
    await expect(start(dir, { subagents: { maxDepth: 1.5 } })).rejects.toThrow("RuntimeOptions.subagents.maxDepth is 1.5");
    await expect(start(dir, { subagents: 3 as never })).rejects.toThrow("RuntimeOptions.subagents must be an object { maxDepth, maxSpawnsPerRun }, not number");
    const { runtime } = await start(dir, { subagents: { maxDepth: 0, maxSpawnsPerRun: 0 } });
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
  });

  it("stops runaway spawning at the depth and count limits with a clear error", async () => {
    const script = {
      turns: [
        { toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "one" } }] },
        { toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "two" } }] },
        { text: "done" },
      ],
      subagents: { researcher: { turns: [{ text: "ok" }] } },
    };
    const { runtime, state } = await start(researchAgent(script), { subagents: { maxSpawnsPerRun: 1 } });
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const outputs = (await state.listToolCalls(result.runId)).map((call) => call.output);
    expect(outputs[0]).toMatchObject({ output: "ok" });
    expect(outputs[1]).toMatchObject({ code: "AL_ERR_SUBAGENT_LIMIT", error: expect.stringContaining("already spawned 1 subagents; the limit is 1") });

    // Spawns made at once count each other: of three, with room for two, one is refused.
    const together = toolSource({
      upFront: true,
      execute: `const tries = await Promise.allSettled(["a", "b", "c"].map((task) => ctx.spawnSubagent({ name: "researcher", task })));
      return tries.map((attempt) => (attempt.status === "fulfilled" ? "spawned" : attempt.reason.code));`,
    });
    const parallel = await start(researchAgent({ turns: [{ toolCalls: [{ name: "together", input: { value: "x" } }] }, { text: "done" }], subagents: { researcher: { turns: [{ text: "ok" }] } } }, { "tools/together.ts": together }), { subagents: { maxSpawnsPerRun: 2 } });
    const all = await parallel.runtime.run({ message: "go" });
    const [togetherCall] = await parallel.state.listToolCalls(all.runId);
    expect((togetherCall?.output as string[]).sort()).toEqual(["AL_ERR_SUBAGENT_LIMIT", "spawned", "spawned"]);
    expect((await parallel.state.listEvents(all.runId)).filter((event) => event.type === "subagent.started")).toHaveLength(2);

    const deep = await start(researchAgent(script), { subagents: { maxDepth: 0 } });
    const refused = await deep.runtime.run({ message: "go" });
    const first = (await deep.state.listToolCalls(refused.runId))[0];
    expect(first?.output).toMatchObject({ code: "AL_ERR_SUBAGENT_LIMIT", error: expect.stringContaining("the limit is 0") });
  });

  it("resumes a follow-up to the same subagent in one conversation with its earlier exchange", async () => {
    const script = {
      turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "remember 7" } }] }, { text: "done" }],
      subagents: { researcher: { turns: [{ text: "noted" }] } },
    };
    const { runtime, state } = await start(researchAgent(script));
    const first = await runtime.run({ message: "one", conversationId: "conv-9" });
    const second = await runtime.run({ message: "two", conversationId: "conv-9" });
    const childOf = async (runId: string) => (await runtime.listEvents(runId)).find((event) => event.type === "subagent.started")!.data.childRunId as string;
    const firstChild = await state.getRun(await childOf(first.runId));
    const secondChild = await state.getRun(await childOf(second.runId));
    expect(secondChild!.conversationId).toBe(firstChild!.conversationId);
    const history = await state.listConversationMessages(secondChild!.conversationId!);
    expect(history.map((message) => message.content)).toEqual(["remember 7", "noted", "remember 7", "noted"]);
    // The subagent's history is its own agent id's (`<agent id>/researcher`), as its run records it.
    expect(secondChild!.agentId.endsWith("/researcher")).toBe(true);
    expect(history.map((message) => message.agentId)).toEqual(Array(4).fill(secondChild!.agentId));
    expect(await state.listConversationMessages(secondChild!.conversationId!, { agentId: secondChild!.agentId })).toHaveLength(4);
  });

  it("counts the root agent's calls, and its own, against the daily budget of the conversation its root run serves", async () => {
    const dir = researchAgent(SPAWN_AND_FINISH, {
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", budgets: { maxConversationTokensPerDay: 100 } });
`,
    });
    // The root run spawns the researcher; the researcher makes two model calls of 20 tokens each.
    const agentHarness: AgentHarness = {
      name: "spends-in-subagent",
      async runTurn(input, ctx) {
        if (input.subagent === undefined) {
          await ctx.callTool({ id: "call_spawn", name: "spawn_subagent", input: { name: "researcher", task: "look it up" } });
          return { status: "completed", response: { text: "done" } };
        }
        for (const key of ["first", "second"]) {
          await ctx.modelCall(key, async () => {
            await ctx.recordUsage({ id: `${input.runId}:${key}`, provider: "test", model: "model", inputTokens: 10, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 });
            return null;
          });
        }
        return { status: "completed", response: { text: "found" } };
      },
    };
    const { runtime, state, manifest } = await start(dir, { agentHarness });
    const rootAgent = manifest.agent.id;
    // The root agent spent 90 today in the conversation; another agent (an id that starts with the root's) spent 500 there.
    const spent = (id: string, agentId: string, inputTokens: number) =>
      state.recordUsage({ id, runId: `run_${id}`, conversationId: "conv-budget", agentId, provider: "test", model: "model", inputTokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, createdAt: new Date().toISOString() });
    await spent("root-earlier", rootAgent, 90);
    await spent("other-agent", `${rootAgent}-eu`, 500);

    const result = await runtime.run({ message: "go", conversationId: "conv-budget" });
    const childRunId = (await runtime.listEvents(result.runId)).find((event) => event.type === "subagent.started")!.data.childRunId as string;
    const child = await state.getRun(childRunId);
    expect(child).toMatchObject({ agentId: `${rootAgent}/researcher`, status: "failed" });
    // Its first call passed at 90; its second was refused at 110: the root's 90 and its own 20, not the other agent's 500.
    expect((await runtime.listEvents(childRunId)).find((event) => event.type === "budget.exceeded")?.data).toEqual({
      budget: "maxConversationTokensPerDay",
      limit: 100,
      used: 110,
      action: "fail",
    });
    expect((await state.listUsage({ runId: childRunId })).map((record) => [record.conversationId, record.agentId])).toEqual([["conv-budget", `${rootAgent}/researcher`]]);
  });
});
