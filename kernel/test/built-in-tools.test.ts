import { describe, expect, it } from "vitest";
import { BUILT_IN_TOOL_NAMES, type JsonValue } from "@assemblyline-agents/core";
import { buildAgent, builtInToolDefaults } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource, writeFiles } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/** The file tools work on /memory, /history, /files and /skills without a sandbox. */
const FILE_TOOLS = ["delete", "edit", "grep", "list", "read", "write"];
const offered = (log: { contexts: Array<{ tools: Array<{ name: string }> }> }) => log.contexts[0]!.tools.map((tool) => tool.name).sort();

describe("built-in tool slots", () => {
  it("exports a default for every built-in name of the spec", () => {
    expect(Object.keys(builtInToolDefaults).sort()).toEqual([...BUILT_IN_TOOL_NAMES].sort());
    for (const tool of Object.values(builtInToolDefaults)) {
      expect(typeof tool.description).toBe("string");
      expect(tool.inputSchema.type).toBe("object");
    }
  });

  it("offers ask_question and the file tools without a sandbox, but neither bash nor the bridge tools when nothing is deferred", async () => {
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }]);
    await runtime.run({ message: "hi" });
    expect(offered(log)).toEqual(["ask_question", ...FILE_TOOLS].sort());
  });

  it("refuses a call to bash without a sandbox, as a recoverable error naming why", async () => {
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: [{ name: "bash", input: { command: "ls" } }] }, { text: "ok" }]);
    const result = await runtime.run({ message: "hi" });
    expect(result.status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toMatchObject({ isError: true, output: { error: 'Tool "bash" needs a sandbox, and this host has no sandbox adapter.' } });
  });

  it("refuses a call to a tool that does not exist, listing what is offered", async () => {
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: [{ name: "nope", input: {} }] }, { text: "ok" }]);
    await runtime.run({ message: "hi" });
    expect(log.outcomes[0]!.outcome).toMatchObject({ isError: true, output: { error: expect.stringMatching(/Unknown tool "nope"\. Available tools: ask_question, delete/) } });
  });

  it("replaces a built-in with tools/<name>.ts", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/ask_question.ts": toolSource({ schema: `{ type: "object", properties: { question: { type: "string" } }, required: ["question"] }`, execute: `return { answer: "auto: " + input.question };` }),
    });
    const { runtime, log, bundle } = await startAgent(dir, [{ toolCalls: [{ name: "ask_question", input: { question: "ok?" } }] }, { text: "done" }]);
    const result = await runtime.run({ message: "hi" });
    expect(result.status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toEqual({ status: "completed", output: { answer: "auto: ok?" }, isError: false });
    expect(bundle.manifest.tools.find((tool) => tool.name === "ask_question")!.kind).toBe("override");
  });

  it("wraps a built-in by spreading builtInToolDefaults", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/ask_question.ts": `import { defineTool } from "@assemblyline-agents/core";
import { builtInToolDefaults } from "@assemblyline-agents/runtime";
const ask = builtInToolDefaults.ask_question;
export default defineTool({ ...ask, async execute(input, ctx) { await ctx.emit("audit.asked", { q: input.question }); return ask.execute(input, ctx); } });`,
    });
    const { runtime, log, types } = await startAgent(dir, [{ toolCalls: [{ name: "ask_question", input: { question: "Color?" } }] }, { text: "done" }]);
    const paused = await runtime.run({ message: "hi" });
    expect(paused.status).toBe("waiting_input");
    expect(log.contexts[0]!.tools.find((tool) => tool.name === "ask_question")!.description).toBe(builtInToolDefaults.ask_question.description);
    expect(await types(paused.runId)).toEqual(expect.arrayContaining(["audit.asked", "input.requested"]));
    expect((await runtime.answer(paused.runId, "green")).status).toBe("completed");
    expect(log.outcomes.at(-1)!.outcome).toMatchObject({ output: { answer: "green" } });
  });

  it("refuses an answer that is not text, leaving the question open for a real one", async () => {
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: [{ name: "ask_question", input: { question: "Which env?" } }] }, { text: "done" }]);
    const paused = await runtime.run({ message: "deploy" });
    for (const answer of [undefined, { env: "prod" }, 42]) {
      await expect(runtime.answer(paused.runId, answer as never)).rejects.toThrow(/answer must be a string/);
    }
    expect((await runtime.getRun(paused.runId)).status).toBe("waiting_input");
    expect((await runtime.answer(paused.runId, "prod")).status).toBe("completed");
    expect(log.outcomes.at(-1)!.outcome).toMatchObject({ output: { answer: "prod" } });
  });

  it("refuses an answer named for a question that is no longer the one waiting, and leaves the new question open", async () => {
    const script = [{ toolCalls: [{ name: "ask_question", input: { question: "Which env?" } }] }, { toolCalls: [{ name: "ask_question", input: { question: "Really delete prod?" } }] }, { text: "done" }];
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), script);
    const first = await runtime.run({ message: "deploy" });
    const firstCall = first.question!.callId;
    const second = await runtime.answer(first.runId, "prod", { callId: firstCall });
    expect(second.status).toBe("waiting_input");
    expect(second.question!.callId).not.toBe(firstCall);
    // A late copy of the first answer (a retry, a second tab) must not say yes to the second question.
    await expect(runtime.answer(first.runId, "prod", { callId: firstCall })).rejects.toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND" });
    expect((await runtime.getRun(first.runId)).question).toMatchObject({ callId: second.question!.callId, question: { question: "Really delete prod?" } });
    expect((await runtime.answer(first.runId, "no", { callId: second.question!.callId })).status).toBe("completed");
    expect(log.outcomes.at(-1)!.outcome).toMatchObject({ output: { answer: "no" } });
  });

  it("removes a built-in with disableTool()", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/ask_question.ts": `import { disableTool } from "@assemblyline-agents/core";\nexport default disableTool();`,
    });
    const { runtime, log } = await startAgent(dir, [{ text: "hi" }]);
    await runtime.run({ message: "hi" });
    expect(offered(log)).toEqual(FILE_TOOLS);
  });
});

describe("coreToolPolicy", () => {
  const twoTools = () => agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/alpha.ts": toolSource({ upFront: true }), "tools/beta.ts": toolSource({ upFront: true }) });

  it("removes a disabled tool from the offer and refuses forced calls by name", async () => {
    const { runtime, log, types } = await startAgent(twoTools(), [{ toolCalls: [{ name: "beta", input: { value: "x" } }] }, { text: "ok" }], {
      coreToolPolicy: { beta: "disabled" },
    });
    const result = await runtime.run({ message: "hi" });
    expect(offered(log)).toEqual(["alpha", "ask_question", ...FILE_TOOLS]);
    expect(log.outcomes[0]!.outcome).toMatchObject({ isError: true, output: { error: expect.stringMatching(/disabled/) } });
    expect(await types(result.runId)).toContain("tool.disabled");
  });

  it("forces an approval gate with approval mode", async () => {
    const { runtime } = await startAgent(twoTools(), [{ toolCalls: [{ name: "alpha", input: { value: "x" } }] }, { text: "ok" }], {
      coreToolPolicy: { alpha: "approval" },
    });
    const paused = await runtime.run({ message: "hi" });
    expect(paused.status).toBe("waiting_approval");
    expect((await runtime.approve(paused.runId)).status).toBe("completed");
  });

  it("reads ASSEMBLY_LINE_BASH_TOOL_MODE for bash, and host policy wins over it", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/bash.ts": toolSource({ schema: `{ type: "object" }`, execute: "return { ran: true };" }) });
    const viaEnv = await startAgent(dir, [{ toolCalls: [{ name: "bash", input: {} }] }, { text: "ok" }], { env: { ASSEMBLY_LINE_BASH_TOOL_MODE: "approval" } });
    expect((await viaEnv.runtime.run({ message: "hi" })).status).toBe("waiting_approval");
    const hostWins = await startAgent(dir, [{ toolCalls: [{ name: "bash", input: {} }] }, { text: "ok" }], {
      env: { ASSEMBLY_LINE_BASH_TOOL_MODE: "approval" },
      coreToolPolicy: { bash: "enabled" },
    });
    expect((await hostWins.runtime.run({ message: "hi" })).status).toBe("completed");
    await expect(startAgent(dir, [], { env: { ASSEMBLY_LINE_BASH_TOOL_MODE: "sometimes" } })).rejects.toThrow(/ASSEMBLY_LINE_BASH_TOOL_MODE=sometimes/);
  });

  it("refuses a host coreToolPolicy with a mode it does not know, or a tool the agent does not have", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/send_email.ts": toolSource({ upFront: true }) });
    await expect(startAgent(dir, [], { coreToolPolicy: { send_email: "aproval" as never } })).rejects.toThrow(/AL_ERR_TOOL_POLICY: RuntimeOptions\.coreToolPolicy: send_email has mode "aproval"/);
    await expect(startAgent(dir, [], { coreToolPolicy: { send_emial: "approval" } })).rejects.toThrow(/AL_ERR_TOOL_POLICY: coreToolPolicy names "send_emial"[\s\S]*send_email/);
    // Built-ins (even one this agent lacks without a sandbox) and connection tools, which may come later, pass.
    const gated = await startAgent(dir, [{ toolCalls: [{ name: "send_email", input: { value: "x" } }] }, { text: "ok" }], {
      coreToolPolicy: { send_email: "approval", bash: "disabled", billing__charge: "approval" },
    });
    expect((await gated.runtime.run({ message: "hi" })).status).toBe("waiting_approval");
  });

  it("applies agent.ts coreToolPolicy and counts it in agentRevision", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/alpha.ts": toolSource({ upFront: true }) });
    const before = (await buildAgent(dir)).manifest.agentRevision;
    writeFiles(dir, {
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "You are a test agent.", coreToolPolicy: { alpha: "disabled" } });`,
    });
    const after = (await buildAgent(dir)).manifest.agentRevision;
    expect(after).not.toBe(before);
    const { runtime, log } = await startAgent(dir, [{ text: "hi" }]);
    await runtime.run({ message: "hi" });
    expect(offered(log)).toEqual(["ask_question", ...FILE_TOOLS]);
  });
});

describe("file tools without a sandbox adapter", () => {
  it("read, write, edit, list, grep and delete /memory, and read /history, with /workspace refused as a recoverable error", async () => {
    const calls: Array<{ name: string; input: JsonValue }> = [
      { name: "write", input: { path: "/memory/notes/today.md", content: "buy milk\nbuy bread" } },
      { name: "edit", input: { path: "/memory/notes/today.md", oldText: "bread", newText: "eggs" } },
      { name: "read", input: { path: "/memory/notes/today.md" } },
      { name: "list", input: { path: "/memory" } },
      { name: "grep", input: { pattern: "eggs", path: "/memory" } },
      { name: "list", input: { path: "/history" } },
      { name: "write", input: { path: "/workspace/out.txt", content: "x" } },
      { name: "delete", input: { path: "/memory/notes/today.md" } },
      { name: "read", input: { path: "/memory/notes/today.md" } },
    ];
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: calls }, { text: "done" }]);
    const result = await runtime.run({ message: "go", conversationId: "conv-1" });
    expect(result.status).toBe("completed");
    const outputs = log.outcomes.map((entry) => entry.outcome);
    expect(outputs[0]).toMatchObject({ isError: false, output: { path: "/memory/notes/today.md" } });
    expect(outputs[1]).toMatchObject({ isError: false, output: { replaced: 1 } });
    expect(outputs[2]).toMatchObject({ output: { content: "buy milk\nbuy eggs" } });
    expect(outputs[3]).toMatchObject({ output: { entries: [{ path: "/memory/notes/today.md", type: "file" }] } });
    expect(outputs[4]).toMatchObject({ output: { matches: ["/memory/notes/today.md:2:buy eggs"] } });
    expect(outputs[5]).toMatchObject({ isError: false, output: { entries: expect.any(Array) } });
    expect(outputs[6]).toMatchObject({ isError: true, output: { code: "AL_ERR_SANDBOX_UNAVAILABLE" } });
    expect(outputs[7]).toMatchObject({ isError: false, output: { deleted: true } });
    expect(outputs[8]).toMatchObject({ isError: true, output: { code: "AL_ERR_PATH_NOT_FOUND" } });
  });
});
