import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime } from "@assemblyline-agents/runtime";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { NO_API_KEY, piAgentHarness } from "../src/index.js";
import { startOpenAIChatServer, type ScriptedModelServer } from "../src/testkit/servers/index.js";

/* The harness under the real runtime: its checkpoint store, approval gate and usage facet. */
const folders: string[] = [];
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

function agentFolder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "al-pi-agent-"));
  folders.push(dir);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

const publishAgent = () =>
  agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "local/llama3", instructions: "You publish notes.", defaultTools: ["publish"] });
`,
    "tools/publish.ts": `import { defineTool, approvalRequired } from "@assemblyline-agents/core";
export default defineTool({
  description: "Publish a note.",
  inputSchema: { type: "object", properties: { note: { type: "string" } }, required: ["note"], additionalProperties: false },
  needsApproval: approvalRequired("Publishing is externally visible."),
  async execute(input) { return { published: input.note }; },
});
`,
  });

describe("pi harness in the runtime", () => {
  let server: ScriptedModelServer & { baseUrl: string };
  beforeEach(async () => {
    server = await startOpenAIChatServer({ apiKey: NO_API_KEY });
  });
  afterEach(() => server.close());

  it("pauses for approval, checkpoints the continuation, and resumes without re-asking the model", async () => {
    const { artifactRoot } = await buildAgent(publishAgent());
    const bundle = await loadRuntimeBundle(artifactRoot);
    const state = new InMemoryStateAdapter();
    const harness = piAgentHarness({ models: { "local/llama3": { api: "openai-completions", baseUrl: server.baseUrl, apiKeyEnv: false } } });
    const runtime = new OpenEveRuntime({ ...bundle, state, defaultHarness: harness, logger: noopLogger() });
    server
      .toolCalls([{ id: "call_pub", name: "publish", argumentChunks: ['{"note":', '"milk"}'] }], { inputTokens: 40, outputTokens: 9 })
      .text(["Published ", "milk."], { inputTokens: 61, outputTokens: 3 });

    const paused = await runtime.run({ message: "Publish milk" });
    expect(paused.status).toBe("waiting_approval");
    expect(server.requests).toHaveLength(1);

    const done = await runtime.approve(paused.runId);
    expect(done.status).toBe("completed");
    expect(server.requests).toHaveLength(2);

    const events = await runtime.listEvents(paused.runId);
    const types = events.map((event) => event.type);
    expect(types.filter((type) => type === "model.response")).toHaveLength(2);
    expect(types).toEqual(expect.arrayContaining(["approval.requested", "approval.granted", "tool.completed", "run.completed"]));
    expect(events.find((event) => event.type === "run.completed")?.data.text).toBe("Published milk.");
    const usage = await state.listUsage({ runId: paused.runId });
    expect(usage.map((u) => [u.inputTokens, u.outputTokens])).toEqual([
      [40, 9],
      [61, 3],
    ]);
    await runtime.close();
  });
});

/* Counts its runs in globalThis.__bumps; with `cancelOnRun`, the user cancels the run while the tool runs. */
const bumpAgent = (cancelOnRun = false) =>
  agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "local/llama3", instructions: "You count.", defaultTools: ["bump"] });
`,
    "tools/bump.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Bump a counter.",
  inputSchema: { type: "object", properties: { by: { type: "number" } }, required: ["by"], additionalProperties: false },
  async execute(input) {
    globalThis.__bumps = (globalThis.__bumps ?? 0) + 1;
    ${cancelOnRun ? 'globalThis.__cancel?.abort(new Error("cancelled by the user"));' : ""}
    return { bumps: globalThis.__bumps };
  },
});
`,
  });

describe("pi harness in the runtime: tool calls of a reply", () => {
  let server: ScriptedModelServer & { baseUrl: string };
  const bumps = () => (globalThis as { __bumps?: number }).__bumps;
  beforeEach(async () => {
    server = await startOpenAIChatServer({ apiKey: NO_API_KEY });
    (globalThis as { __bumps?: number }).__bumps = 0;
  });
  afterEach(() => server.close());

  const start = async (cancelOnRun = false) => {
    const { artifactRoot } = await buildAgent(bumpAgent(cancelOnRun));
    const state = new InMemoryStateAdapter();
    const harness = piAgentHarness({ models: { "local/llama3": { api: "openai-completions", baseUrl: server.baseUrl, apiKeyEnv: false } } });
    const runtime = new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state, defaultHarness: harness, logger: noopLogger() });
    return { runtime, state };
  };
  const bump = (id: string, by: number) => ({ id, name: "bump", argumentChunks: [`{"by":${by}}`] });

  it.each([
    ["the same input", 1],
    ["other input", 2],
  ])("runs a call whose provider id an earlier reply used, with %s, under an id of its own", async (_what, by) => {
    const { runtime, state } = await start();
    server.toolCalls([bump("call_0", 1)]).toolCalls([bump("call_0", by)]).text(["done"]);

    const result = await runtime.run({ message: "bump twice" });

    expect(result.status).toBe("completed");
    expect(bumps()).toBe(2);
    expect((await state.listToolCalls(result.runId)).map((call) => call.callId)).toEqual(["call_0", "model2_call0"]);
    await runtime.close();
  });

  it("runs each call of a reply whose provider sent no ids (OpenAI-compatible servers may not)", async () => {
    const { runtime, state } = await start();
    server.toolCalls([bump("", 1), bump("", 1)]).text(["done"]);

    const result = await runtime.run({ message: "bump twice" });

    expect(result.status).toBe("completed");
    expect(bumps()).toBe(2);
    expect((await state.listToolCalls(result.runId)).map((call) => call.callId)).toEqual(["model1_call0", "model1_call1"]);
    await runtime.close();
  });

  it("runs none of a reply's remaining calls once the run is cancelled", async () => {
    const { runtime } = await start(true);
    const cancel = new AbortController();
    (globalThis as { __cancel?: AbortController }).__cancel = cancel;
    server.toolCalls([bump("call_a", 1), bump("call_b", 2)]).text(["done"]);

    const result = await runtime.run({ message: "bump twice", signal: cancel.signal });
    (globalThis as { __cancel?: AbortController }).__cancel = undefined;

    expect(result).toMatchObject({ status: "failed", error: { message: "cancelled by the user" } });
    expect(bumps()).toBe(1);
    expect(server.requests).toHaveLength(1);
    await runtime.close();
  });
});
