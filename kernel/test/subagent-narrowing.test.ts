import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { DEFAULT_RUN_BUDGETS, defineHttpConnection, defineTool, type ConnectionProvider, type JsonValue } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger } from "@assemblyline-agents/runtime";
import { startBuilt } from "./support/runtime.js";
import { agentFolder, toolSource } from "./support/agent-folder.js";

const SCRIPTED_ROOT = (extra = "") => `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname${extra} });
`;
const subagent = (options: string) => `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Does delegated work.", ${options} });
`;

function folder(files: Record<string, string>, script: object = { turns: [{ text: "done" }] }): string {
  const dir = agentFolder({ "agent.ts": SCRIPTED_ROOT(), ...files });
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  return dir;
}

const start = startBuilt;

/** The parent spawns `name` once; the child calls `echo` forever. */
const SPAWN_A_LOOPING_CHILD = {
  turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "worker", task: "Loop." } }] }, { text: "The parent is done." }],
  subagents: { worker: { turns: [{ toolCalls: [{ name: "echo", input: { value: "again" } }] }], loop: true } },
};

async function childOf(runtime: OpenEveRuntime, parentRunId: string): Promise<string> {
  const started = (await runtime.listEvents(parentRunId)).find((event) => event.type === "subagent.started");
  return started!.data.childRunId as string;
}

describe("subagent budgets", () => {
  it("stops a subagent's run at its own budget, not the root's", async () => {
    const dir = folder({ "subagents/worker/agent.ts": subagent("budgets: { maxTurns: 3 }"), "subagents/worker/tools/echo.ts": toolSource({ upFront: true }) }, SPAWN_A_LOOPING_CHILD);
    const { runtime, manifest } = await start(dir);
    expect(manifest.subagents[0]!.budgets).toEqual({ maxTurns: 3 });

    const parent = await runtime.run({ message: "go" });
    const child = await runtime.getRun(await childOf(runtime, parent.runId));
    expect(child.status).toBe("failed");
    expect(child.error?.code).toBe("AL_ERR_BUDGET_EXCEEDED");
    const childEvents = await runtime.listEvents(child.runId);
    expect(childEvents.find((event) => event.type === "budget.exceeded")?.data).toEqual({ budget: "maxTurns", limit: 3, used: 3, action: "fail" });
    expect(childEvents.filter((event) => event.type === "tool.completed")).toHaveLength(3);
    // The root's own runs keep the root's limits.
    expect(runtime.profiles.budgets.maxTurns).toBe(50);
  });

  it("inherits the parent's budgets, lets the host's ceiling win, and pauses the child when its budget says so", async () => {
    const inherited = folder(
      { "agent.ts": SCRIPTED_ROOT(", budgets: { maxTurns: 4, maxCostUsd: 2 }"), "subagents/worker/agent.ts": subagent("budgets: { maxCostUsd: 1 }"), "subagents/worker/tools/echo.ts": toolSource({ upFront: true }) },
      SPAWN_A_LOOPING_CHILD,
    );
    const { runtime, manifest } = await start(inherited, { budgets: { maxTurns: 2 } });
    expect(manifest.subagents[0]!.budgets).toEqual({ maxTurns: 4, maxCostUsd: 1 });
    const parent = await runtime.run({ message: "go" });
    const childEvents = await runtime.listEvents(await childOf(runtime, parent.runId));
    expect(childEvents.find((event) => event.type === "budget.exceeded")?.data).toEqual({ budget: "maxTurns", limit: 2, used: 2, action: "fail" });

    const pausing = folder({ "subagents/worker/agent.ts": subagent('budgets: { maxTurns: 2, onExceeded: "pause" }'), "subagents/worker/tools/echo.ts": toolSource({ upFront: true }) }, SPAWN_A_LOOPING_CHILD);
    const paused = await start(pausing);
    const waiting = await paused.runtime.run({ message: "go" });
    expect(waiting.status).toBe("waiting_approval");
    const childId = await childOf(paused.runtime, waiting.runId);
    expect((await paused.runtime.getRun(childId)).pendingBudget).toEqual({ budget: "maxTurns", limit: 2, used: 2 });
    // The parent shows what it waits on: the child's budget, which approve and deny on the parent decide.
    expect(waiting).toMatchObject({ pendingApprovals: [], pendingBudget: { budget: "maxTurns", limit: 2, used: 2 }, waitingOn: { runId: childId, subagent: "worker" } });
    // Approving grows the child's budget by the child's own limit (2), not the root's (50).
    const again = await paused.runtime.approve(childId);
    expect(again.pendingBudget).toEqual({ budget: "maxTurns", limit: 4, used: 4 });
    const parentNow = await paused.runtime.approve(waiting.runId);
    expect(parentNow).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxTurns", limit: 6, used: 6 }, waitingOn: { runId: childId } });
  });

  it("counts what a run's subagents spend in its token and cost budgets, and gives each child only what is left", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", budgets: { maxTokens: 100, maxCostUsd: 1 } });\n`,
      "subagents/worker/agent.ts": subagent(""),
    });
    // Each child spends 90 tokens and $0.90 in one model call; the root spawns them one after another.
    const agentHarness = {
      name: "spender",
      async runTurn(input: { runId: string; subagent?: unknown }, ctx: { callTool(call: object): Promise<unknown>; modelCall(key: string, fn: () => Promise<unknown>): Promise<unknown>; recordUsage(record: object): Promise<void> }) {
        if (input.subagent === undefined) {
          for (const index of [1, 2, 3]) await ctx.callTool({ id: `call_spawn_${index}`, name: "spawn_subagent", input: { name: "worker", task: `look ${index}` } });
          return { status: "completed", response: { text: "done" } };
        }
        await ctx.modelCall("m", async () => {
          await ctx.recordUsage({ id: `${input.runId}:m`, provider: "test", model: "model", inputTokens: 45, outputTokens: 45, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.9 });
          return null;
        });
        return { status: "completed", response: { text: "found" } };
      },
    };
    const { runtime } = await start(dir, { agentHarness: agentHarness as never });
    const root = await runtime.run({ message: "go" });
    const events = await runtime.listEvents(root.runId);
    const started = events.filter((event) => event.type === "subagent.started").map((event) => event.data.childRunId as string);
    const children = await Promise.all(started.map((id) => runtime.getRun(id)));
    expect(children.map((child) => child.status)).toEqual(["completed", "completed"]);
    // The second child had only what the first left: 10 tokens, $0.10 (its one call then went past it, as a measured budget may).
    const left = await Promise.all(started.map(async (id) => (await runtime.state.runs.getRun(id))!.input.parent!.budgetLeft));
    expect(left).toEqual([{ maxTokens: 100, maxCostUsd: 1 }, { maxTokens: 10, maxCostUsd: 0.1 }]);
    expect(events.filter((event) => event.type === "subagent.completed").map((event) => event.data.usage)).toEqual([{ tokens: 90, costUsd: 0.9 }, { tokens: 90, costUsd: 0.9 }]);
    // The root spent nothing itself, yet its third spawn is refused: what its subagents spent counts.
    expect(root).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
    expect(events.find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxTokens", limit: 100, used: 180 });
  });

  it("stops a subagent at what its parent had left, below its own cost budget", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", budgets: { maxCostUsd: 1 } });\n`,
      "subagents/worker/agent.ts": subagent(""),
    });
    // The child calls its model three times at $0.30 a call; the root had spent $0.90 before it spawned it.
    const agentHarness = {
      name: "spender",
      async runTurn(input: { runId: string; subagent?: unknown }, ctx: { callTool(call: object): Promise<unknown>; modelCall(key: string, fn: () => Promise<unknown>): Promise<unknown>; recordUsage(record: object): Promise<void> }) {
        if (input.subagent === undefined) {
          await ctx.callTool({ id: "call_spawn", name: "spawn_subagent", input: { name: "worker", task: "look" } });
          return { status: "completed", response: { text: "done" } };
        }
        for (const index of [1, 2, 3]) {
          await ctx.modelCall(`m${index}`, async () => {
            await ctx.recordUsage({ id: `${input.runId}:m${index}`, provider: "test", model: "model", inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.3 });
            return null;
          });
        }
        return { status: "completed", response: { text: "found" } };
      },
    };
    const { runtime } = await start(dir, { agentHarness: agentHarness as never });
    const { runId } = await runtime.submit({ message: "go" });
    await runtime.state.usage.recordUsage({ id: "earlier", runId, conversationId: null, provider: "test", model: "model", inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.9, createdAt: new Date().toISOString(), agentId: null });
    await runtime.start(runId);
    const childId = await childOf(runtime, runId);
    expect((await runtime.state.runs.getRun(childId))!.input.parent!.budgetLeft).toEqual({ maxCostUsd: 0.1 });
    // Its own budget (the root's $1, inherited) would allow three calls; what the root had left allows one.
    const child = await runtime.getRun(childId);
    expect(child).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
    expect((await runtime.listEvents(childId)).find((event) => event.type === "budget.exceeded")?.data).toEqual({ budget: "maxCostUsd", limit: 0.1, used: 0.3, action: "fail" });
  });

  it("bounds a subagent by the root's budgets when its manifest entry has none (a build from before subagents had budgets)", async () => {
    const dir = folder({ "agent.ts": SCRIPTED_ROOT(", budgets: { maxTurns: 3 }"), "subagents/worker/agent.ts": subagent(""), "subagents/worker/tools/echo.ts": toolSource({ upFront: true }) }, SPAWN_A_LOOPING_CHILD);
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    const { budgets: _merged, ...olderEntry } = bundle.manifest.subagents[0]!;
    const older = { ...bundle.manifest, subagents: [olderEntry] };
    const runtime = new OpenEveRuntime({ ...bundle, manifest: older, state: new InMemoryStateAdapter(), logger: noopLogger() });
    const parent = await runtime.run({ message: "go" });
    const childEvents = await runtime.listEvents(await childOf(runtime, parent.runId));
    expect(childEvents.find((event) => event.type === "budget.exceeded")?.data).toEqual({ budget: "maxTurns", limit: 3, used: 3, action: "fail" });
  });

  it("refuses a subagent budget above the default its parent runs under when the parent sets none, and takes one at or below it", async () => {
    // The root sets no budgets: its runs stop at 50 turns, 200 tool calls and an hour, and a child may not run longer.
    await expect(buildAgent(folder({ "subagents/worker/agent.ts": subagent("budgets: { maxTurns: 500 }") }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_NARROWING",
      message: expect.stringContaining(`subagents/worker/: budgets.maxTurns is 500, above the parent's ${DEFAULT_RUN_BUDGETS.maxTurns} (the default: the parent's agent.ts sets no maxTurns, and a host's budgets option is not known at build)`),
      fix: expect.stringContaining("budgets: { maxTurns: 500 } in the parent's agent.ts"),
    });
    await expect(buildAgent(folder({ "subagents/worker/agent.ts": subagent("budgets: { maxToolCalls: 201 }") }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_NARROWING",
      message: expect.stringContaining("budgets.maxToolCalls is 201"),
    });
    await expect(buildAgent(folder({ "subagents/worker/agent.ts": subagent(`budgets: { maxDurationMs: ${DEFAULT_RUN_BUDGETS.maxDurationMs + 1} }`) }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_NARROWING",
      message: expect.stringContaining("budgets.maxDurationMs"),
    });
    // A nested child is held to its parent's defaults too.
    await expect(
      buildAgent(folder({ "subagents/worker/agent.ts": subagent("budgets: { maxToolCalls: 5 }"), "subagents/worker/subagents/helper/agent.ts": subagent("budgets: { maxTurns: 51 }") })),
    ).rejects.toMatchObject({ code: "AL_ERR_SUBAGENT_NARROWING", message: expect.stringContaining("subagents/worker/subagents/helper/: budgets.maxTurns is 51") });
    // A parent that declares more lets its child have it.
    const raised = await buildAgent(folder({ "agent.ts": SCRIPTED_ROOT(", budgets: { maxTurns: 500 }"), "subagents/worker/agent.ts": subagent(`budgets: { maxTurns: 500, maxToolCalls: ${DEFAULT_RUN_BUDGETS.maxToolCalls} }`) }));
    expect(raised.manifest.subagents[0]!.budgets).toMatchObject({ maxTurns: 500, maxToolCalls: DEFAULT_RUN_BUDGETS.maxToolCalls });
  });

  it("refuses a subagent budget looser than its parent's, an invalid one, and a subagent name", async () => {
    await expect(buildAgent(folder({ "agent.ts": SCRIPTED_ROOT(", budgets: { maxTurns: 10 }"), "subagents/worker/agent.ts": subagent("budgets: { maxTurns: 20 }") }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_NARROWING",
      message: expect.stringContaining("subagents/worker/: budgets.maxTurns is 20, above the parent's 10"),
    });
    await expect(
      buildAgent(folder({ "subagents/worker/agent.ts": subagent("budgets: { maxTurns: 5 }"), "subagents/worker/subagents/helper/agent.ts": subagent("budgets: { maxTurns: 6 }") })),
    ).rejects.toMatchObject({ code: "AL_ERR_SUBAGENT_NARROWING", message: expect.stringContaining("subagents/worker/subagents/helper/: budgets.maxTurns is 6, above the parent's 5") });
    await expect(buildAgent(folder({ "subagents/worker/agent.ts": subagent("budgets: { maxTurn: 5 }") }))).rejects.toMatchObject({
      code: "AL_ERR_BUDGET_INVALID",
      message: expect.stringContaining('subagents/worker/agent.ts budgets has an unknown budget "maxTurn"'),
    });
    await expect(buildAgent(folder({ "subagents/worker/agent.ts": subagent('name: "Worker"') }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_DEFINITION",
      message: expect.stringContaining("agent.ts sets name, which only a root agent may set"),
      fix: expect.stringContaining("a subagent's name is its folder's"),
    });
    // A host's policy may gate a subagent's own tool; a name no table has is still refused.
    const withOwnTool = folder({ "subagents/worker/agent.ts": subagent(""), "subagents/worker/tools/lookup.ts": toolSource({ upFront: true }) });
    await expect(start(withOwnTool, { coreToolPolicy: { lookup: "approval" } })).resolves.toBeDefined();
    await expect(start(withOwnTool, { coreToolPolicy: { lokup: "approval" } })).rejects.toMatchObject({ code: "AL_ERR_TOOL_POLICY", message: expect.stringContaining('"lokup"') });
    // A subagent written as a file would otherwise be left out of the build without a word.
    await expect(buildAgent(folder({ "subagents/worker/agent.ts": subagent(""), "subagents/env.d.ts": "declare const x: number;\n" }))).resolves.toBeDefined();
    await expect(buildAgent(folder({ "subagents/researcher.ts": subagent("") }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_DEFINITION",
      message: expect.stringContaining("subagents/researcher.ts: a subagent is a folder, not a file"),
      fix: expect.stringContaining("subagents/researcher/agent.ts"),
    });
    // So is one in an extension the compiler skips; a file that is not code (a README.md) passes.
    for (const name of ["helper.cts", "helper.tsx"]) {
      await expect(buildAgent(folder({ [`subagents/${name}`]: subagent("") }))).rejects.toMatchObject({
        code: "AL_ERR_SUBAGENT_DEFINITION",
        message: expect.stringContaining(`subagents/${name}: a subagent is a folder, not a file`),
        fix: expect.stringContaining("subagents/helper/agent.ts"),
      });
    }
    await expect(buildAgent(folder({ "subagents/worker/agent.ts": subagent(""), "subagents/README.md": "# Subagents\n" }))).resolves.toBeDefined();
    // A misspelled key would otherwise build a subagent without the narrowing it meant.
    await expect(buildAgent(folder({ "subagents/worker/agent.ts": subagent('tool: ["list_connections"]') }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_DEFINITION",
      message: expect.stringContaining('subagents/worker/agent.ts: unknown key "tool"'),
    });
  });
});

/** A connections provider whose every connection has one tool, `<name>__ping`. */
function pingConnections(): ConnectionProvider {
  return {
    describe: async () => ({}),
    tools: (name) => ({
      [`${name}__ping`]: defineTool({
        description: `Ping ${name}.`,
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
        execute: async () => ({ from: name }),
      }),
    }),
  };
}

const httpConnection = (name: string) => `import { defineHttpConnection } from "@assemblyline-agents/core";
export default defineHttpConnection({ description: "The ${name} service.", baseUrl: "https://${name}.example.com", endpoints: {} });
`;

const LIST_CONNECTIONS = toolSource({ upFront: true, schema: `{ type: "object", properties: {}, additionalProperties: false }`, execute: "return { connections: Object.keys(ctx.connections).sort() };" });

/** The child lists its connections, then calls each connection's tool through tool_call. */
const childScript = {
  turns: [
    { toolCalls: [{ name: "list_connections", input: {} }] },
    { toolCalls: [{ name: "tool_call", input: { name: "billing__ping", input: {} } }] },
    { toolCalls: [{ name: "tool_call", input: { name: "crm__ping", input: {} } }] },
    { text: "checked" },
  ],
};

describe("subagent connections", () => {
  it("gives a subagent only the parent connections it names; one that names none gets none", async () => {
    const dir = folder(
      {
        "connections/billing.ts": httpConnection("billing"),
        "connections/crm.ts": httpConnection("crm"),
        "tools/list_connections.ts": LIST_CONNECTIONS,
        "subagents/accountant/agent.ts": subagent('connections: ["billing"], tools: ["list_connections"]'),
        "subagents/writer/agent.ts": subagent('tools: ["list_connections"]'),
      },
      {
        turns: [
          { toolCalls: [{ name: "spawn_subagent", input: { name: "accountant", task: "Check." } }] },
          { toolCalls: [{ name: "spawn_subagent", input: { name: "writer", task: "Check." } }] },
          { toolCalls: [{ name: "list_connections", input: {} }] },
          { text: "done" },
        ],
        subagents: { accountant: childScript, writer: childScript },
      },
    );
    const { runtime, state, manifest } = await start(dir, { connections: pingConnections() });
    expect(manifest.subagents.map((entry) => [entry.name, entry.connections])).toEqual([
      ["accountant", ["billing"]],
      ["writer", []],
    ]);
    const parent = await runtime.run({ message: "go" });
    expect(parent.status).toBe("completed");

    const started = (await runtime.listEvents(parent.runId)).filter((event) => event.type === "subagent.started");
    const outputsOf = async (runId: string) => Object.fromEntries((await state.listToolCalls(runId)).map((call) => [call.toolName, call.output as JsonValue]));
    const accountant = await outputsOf(started[0]!.data.childRunId as string);
    expect(accountant.list_connections).toEqual({ connections: ["billing"] });
    expect(accountant.billing__ping).toEqual({ from: "billing" });
    expect(accountant.crm__ping).toMatchObject({ error: expect.stringContaining('Unknown tool "crm__ping"') });

    const writer = await outputsOf(started[1]!.data.childRunId as string);
    expect(writer.list_connections).toEqual({ connections: [] });
    // No connection tool reached its table: nothing is deferred, so it is not even offered tool_call.
    expect(writer).toEqual({ list_connections: { connections: [] }, tool_call: { error: expect.stringContaining('Unknown tool "tool_call"') } });

    // The root keeps both.
    const root = await outputsOf(parent.runId);
    expect(root.list_connections).toEqual({ connections: ["billing", "crm"] });
  });

  it("gives a subagent a named connection that comes up after the subagent's tools were first derived", async () => {
    const dir = folder(
      { "connections/billing.ts": httpConnection("billing"), "tools/list_connections.ts": LIST_CONNECTIONS, "subagents/accountant/agent.ts": subagent('connections: ["billing"], tools: ["list_connections"]') },
      { turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "accountant", task: "Check." } }] }, { text: "done" }], subagents: { accountant: childScript } },
    );
    // billing is down for the first run and answers from the next describe on.
    const provider = pingConnections();
    let described = 0;
    const describe = provider.describe;
    provider.describe = async (...args) => {
      described += 1;
      if (described === 1) throw new Error("billing is down");
      return describe(...args);
    };
    const { runtime, state } = await start(dir, { connections: provider });
    const childCalls = async () => {
      const parent = await runtime.run({ message: "go" });
      const child = (await runtime.listEvents(parent.runId)).find((event) => event.type === "subagent.started")!.data.childRunId as string;
      return Object.fromEntries((await state.listToolCalls(child)).map((call) => [call.toolName, call.output as JsonValue]));
    };
    expect((await childCalls()).list_connections).toEqual({ connections: [] });
    // A connection that failed is tried again after a backoff (a second, at first).
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 1_100);
      const calls = await childCalls();
      expect(calls.list_connections).toEqual({ connections: ["billing"] });
      expect(calls.billing__ping).toEqual({ from: "billing" });
    } finally {
      vi.useRealTimers();
    }
  });

  it("gives a subagent a connection the host declares, which no connections/ file names", async () => {
    const dir = folder(
      { "connections/billing.ts": httpConnection("billing"), "tools/list_connections.ts": LIST_CONNECTIONS, "subagents/accountant/agent.ts": subagent('connections: ["crm"], tools: ["list_connections"]') },
      { turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "accountant", task: "Check." } }] }, { text: "done" }], subagents: { accountant: childScript } },
    );
    const provider: ConnectionProvider = { ...pingConnections(), connections: { crm: defineHttpConnection({ description: "The CRM.", baseUrl: "https://crm.example.com", endpoints: {} }) } };
    const { runtime, state } = await start(dir, { connections: provider });
    const parent = await runtime.run({ message: "go" });
    expect(parent.status).toBe("completed");
    const child = (await runtime.listEvents(parent.runId)).find((event) => event.type === "subagent.started")!.data.childRunId as string;
    const calls = Object.fromEntries((await state.listToolCalls(child)).map((call) => [call.toolName, call.output as JsonValue]));
    expect(calls.list_connections).toEqual({ connections: ["crm"] });
    expect(calls.crm__ping).toEqual({ from: "crm" });
    expect(calls.billing__ping).toMatchObject({ error: expect.stringContaining('Unknown tool "billing__ping"') });
  });

  it("refuses at start a subagent connection neither connections/ nor the host declares, unless runs may add connections", async () => {
    const dir = folder({ "connections/billing.ts": httpConnection("billing"), "subagents/accountant/agent.ts": subagent('connections: ["crm"]') });
    const refusal = {
      code: "AL_ERR_SUBAGENT_NARROWING",
      message: expect.stringContaining('subagents/accountant/agent.ts names connection "crm", which neither connections/ nor the host declares'),
      fix: expect.stringContaining("(billing)"),
    };
    await expect(start(dir, { connections: pingConnections() })).rejects.toMatchObject(refusal);
    // Without a connections provider the name is no more declared.
    await expect(start(dir)).rejects.toMatchObject(refusal);
    // A run may add "crm" when dynamic connections are on: the name waits for it.
    const dynamic = folder({
      "agent.ts": SCRIPTED_ROOT(', dynamicConnections: { dynamic: true, approval: false, allowedHosts: ["crm.example.com"] }'),
      "subagents/accountant/agent.ts": subagent('connections: ["crm"]'),
    });
    await expect(start(dynamic, { connections: pingConnections() })).resolves.toBeDefined();
  });

  it("refuses at build a connection name no connection can have, and one a subagent's own parent did not name", async () => {
    await expect(buildAgent(folder({ "subagents/accountant/agent.ts": subagent('connections: ["Billing API"]') }))).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_DEFINITION",
      message: expect.stringContaining('connections names "Billing API", which is no connection name'),
    });
    const nested = folder({
      "connections/billing.ts": httpConnection("billing"),
      "connections/crm.ts": httpConnection("crm"),
      "subagents/accountant/agent.ts": subagent('connections: ["billing"]'),
      "subagents/accountant/subagents/clerk/agent.ts": subagent('connections: ["crm"]'),
    });
    await expect(buildAgent(nested)).rejects.toMatchObject({
      code: "AL_ERR_SUBAGENT_NARROWING",
      message: expect.stringContaining('names connection "crm" that the parent lacks'),
      fix: expect.stringContaining("(billing)"),
    });
  });
});
