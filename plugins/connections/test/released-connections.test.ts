import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { defineMcpConnection, type AgentHarness, type ConnectionPolicy, type JsonValue, type OutboundResolver, type RunEvent } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness, type ModelScript, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { createConnections } from "../src/index.js";
import { eventually, startSessionServer, type SessionServer } from "./support/session-server.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["mcp.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;

const work = mkdtempSync(join(tmpdir(), "al-released-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** What each test started, stopped after it whatever happened. */
const started: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close();
});

async function server(name: string): Promise<SessionServer> {
  const started_ = await startSessionServer(name);
  started.push({ close: () => started_.stop() });
  return started_;
}

describe("releasing an MCP connection", () => {
  it("ends its session on the server, and a later use opens a fresh one", async () => {
    const echo = await server("echo-server");
    const provider = createConnections({ resolve });
    started.push({ close: async () => provider.close?.() });
    const definition = defineMcpConnection({ url: echo.url, description: "Echo" });
    const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
    expect(await tools.echo__echo!.execute({ word: "one" }, callCtx())).toMatchObject({ content: [{ type: "text", text: "one from echo-server" }] });
    expect(echo.sessions.size).toBe(1);

    await provider.release!("echo", definition, policy);
    expect(echo.ended).toEqual([echo.opened[0]]);
    expect(echo.sessions.size).toBe(0);

    // A run that still holds the tool connects again rather than fail on a closed client.
    expect(await tools.echo__echo!.execute({ word: "two" }, callCtx())).toMatchObject({ content: [{ type: "text", text: "two from echo-server" }] });
    expect(echo.opened).toHaveLength(2);
    expect(echo.sessions.size).toBe(1);
  }, 20_000);

  it("lets a call in flight finish before it ends the session, while a call made after the release opens a session of its own", async () => {
    const echo = await server("echo-server");
    const provider = createConnections({ resolve });
    started.push({ close: async () => provider.close?.() });
    const definition = defineMcpConnection({ url: echo.url, description: "Echo" });
    const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);

    const inFlight = tools.echo__wait!.execute({}, callCtx());
    await eventually(() => echo.waiting === 1);
    let released = false;
    const release = provider.release!("echo", definition, policy).then(() => void (released = true));
    await new Promise((done) => setTimeout(done, 100));
    expect(released).toBe(false);
    expect(echo.ended).toEqual([]);
    expect(await tools.echo__echo!.execute({ word: "after" }, callCtx())).toMatchObject({ content: [{ type: "text", text: "after from echo-server" }] });
    expect(echo.opened).toHaveLength(2);

    echo.finishWaits();
    expect(await inFlight).toMatchObject({ content: [{ type: "text", text: "waited from echo-server" }] });
    await release;
    expect(echo.ended).toEqual([echo.opened[0]]);
    expect([...echo.sessions.keys()]).toEqual([echo.opened[1]]);
  }, 20_000);

  it("ends a released session still finishing a call when the host closes the provider, instead of leaving it open", async () => {
    const echo = await server("echo-server");
    const provider = createConnections({ resolve });
    started.push({ close: async () => provider.close?.() });
    const definition = defineMcpConnection({ url: echo.url, description: "Echo" });
    const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
    const inFlight = Promise.resolve(tools.echo__wait!.execute({}, callCtx())).catch((error: unknown) => error);
    await eventually(() => echo.waiting === 1);
    void provider.release!("echo", definition, policy);
    await provider.close!();
    expect(echo.ended).toEqual([echo.opened[0]]);
    expect(echo.sessions.size).toBe(0);
    echo.finishWaits();
    await inFlight;
  }, 20_000);
});

const CONNECT = `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Connect to a service.",
  inputSchema: { type: "object", properties: { spec: { type: "object" } }, required: ["spec"] },
  defaultEnabled: true,
  async execute(input, ctx) {
    return await ctx.connectionManager.add(input.spec);
  },
});
`;
const DISCONNECT = `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Remove a connection.",
  inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  defaultEnabled: true,
  async execute(input, ctx) {
    return await ctx.connectionManager.remove(input.name);
  },
});
`;

let built: RuntimeBundle | undefined;
async function bundle(): Promise<RuntimeBundle> {
  if (built) return built;
  const dir = join(work, "notes-agent");
  const files: Record<string, string> = {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "notes-agent", model: "test/model", dynamicConnections: { dynamic: true, approval: false, allowedHosts: ["mcp.test"] } });\n`,
    "tools/connect.ts": CONNECT,
    "tools/disconnect.ts": DISCONNECT,
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return (built = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot));
}

/** The runs of a runtime take these scripts in the order they start. */
function scriptsInOrder(scripts: ModelScript[]): AgentHarness {
  const byRun = new Map<string, AgentHarness>();
  return {
    name: "scripted",
    runTurn: (input, ctx) => {
      let harness = byRun.get(input.runId);
      if (!harness) {
        const script = scripts[byRun.size];
        if (!script) throw new Error(`no script for run ${byRun.size + 1}`);
        byRun.set(input.runId, (harness = scriptedHarness(script)));
      }
      return harness.runTurn(input, ctx);
    },
  };
}

/** A replica: its own provider and tool table over the shared state store. */
async function replica(state: InMemoryStateAdapter, scripts: ModelScript[]): Promise<OpenEveRuntime> {
  const runtime = new OpenEveRuntime({ ...(await bundle()), state, agentHarness: scriptsInOrder(scripts), logger: noopLogger(), connections: createConnections({ resolve }) });
  started.push({ close: () => runtime.close() });
  return runtime;
}

const connect = (url: string): ModelScript["turns"][number] => ({ toolCalls: [{ name: "connect", input: { spec: { name: "notes", kind: "mcp", url, description: "Notes" } } as unknown as JsonValue }] });
const disconnect: ModelScript["turns"][number] = { toolCalls: [{ name: "disconnect", input: { name: "notes" } }] };
const call = (tool: "echo" | "wait", word = "hi"): ModelScript["turns"][number] => ({ toolCalls: [{ name: "tool_call", input: { name: `notes__${tool}`, input: tool === "echo" ? { word } : {} } }] });
const say = (text: string): ModelScript["turns"][number] => ({ text });

const outputOf = (events: RunEvent[], toolName: string, nth = 0) => events.filter((event) => event.type === "tool.completed" && event.data.toolName === toolName)[nth]?.data.output as Record<string, unknown> | undefined;

describe("a run-added MCP connection that is removed", () => {
  it("has its session ended on the server when a run removes it", async () => {
    const notes = await server("notes");
    const runtime = await replica(new InMemoryStateAdapter(), [{ turns: [connect(notes.url), call("echo"), disconnect, say("done")] }]);
    const result = await runtime.run({ message: "use notes, then drop it" });
    expect(result.status).toBe("completed");
    expect(outputOf(await runtime.listEvents(result.runId), "notes__echo")).toMatchObject({ content: [{ type: "text", text: "hi from notes" }] });

    await eventually(() => notes.ended.length === 1);
    expect(notes.ended).toEqual(notes.opened);
    expect(notes.sessions.size).toBe(0);
  }, 30_000);

  it("answers a call that was in flight when another run removed the connection, then ends the session", async () => {
    const notes = await server("notes");
    const state = new InMemoryStateAdapter();
    const runtime = await replica(state, [{ turns: [connect(notes.url), say("connected")] }, { turns: [call("wait"), say("waited")] }, { turns: [disconnect, say("removed")] }]);
    expect((await runtime.run({ message: "connect" })).status).toBe("completed");

    const waiting = runtime.run({ message: "wait on notes" });
    await eventually(() => notes.waiting === 1);
    const removal = await runtime.run({ message: "drop notes" });
    expect(outputOf(await runtime.listEvents(removal.runId), "disconnect")).toEqual({ removed: true });
    await new Promise((done) => setTimeout(done, 100));
    expect(notes.ended).toEqual([]);

    notes.finishWaits();
    const waited = await waiting;
    expect(waited.status).toBe("completed");
    expect(outputOf(await runtime.listEvents(waited.runId), "notes__wait")).toMatchObject({ content: [{ type: "text", text: "waited from notes" }] });
    await eventually(() => notes.ended.length === 1);
    expect(notes.sessions.size).toBe(0);
  }, 30_000);

  it("has another replica's session ended on that replica's next turn", async () => {
    const notes = await server("notes");
    const state = new InMemoryStateAdapter();
    const first = await replica(state, [{ turns: [connect(notes.url), call("echo", "one"), say("connected")] }, { turns: [disconnect, say("removed")] }]);
    const second = await replica(state, [{ turns: [call("echo", "two"), say("called")] }, { turns: [say("nothing to do")] }]);
    expect((await first.run({ message: "connect" })).status).toBe("completed");
    expect((await second.run({ message: "call notes" })).status).toBe("completed");
    expect(notes.sessions.size).toBe(2);
    const [firstSession, secondSession] = notes.opened;

    expect((await first.run({ message: "drop notes" })).status).toBe("completed");
    await eventually(() => notes.ended.length === 1);
    expect(notes.ended).toEqual([firstSession]);
    expect(notes.sessions.has(secondSession!)).toBe(true);

    // The second replica learns of the removal when a turn of its own refreshes the connections.
    expect((await second.run({ message: "anything" })).status).toBe("completed");
    await eventually(() => notes.ended.length === 2);
    expect(notes.ended).toEqual([firstSession, secondSession]);
    expect(notes.sessions.size).toBe(0);
  }, 30_000);

  it("has the old server's session ended when the connection is replaced by one to another server", async () => {
    const [before, after] = [await server("before"), await server("after")];
    const state = new InMemoryStateAdapter();
    const first = await replica(state, [{ turns: [connect(before.url), say("connected")] }, { turns: [disconnect, connect(after.url), say("replaced")] }]);
    const second = await replica(state, [{ turns: [call("echo", "one"), say("called")] }, { turns: [call("echo", "two"), say("called again")] }]);
    expect((await first.run({ message: "connect" })).status).toBe("completed");
    const one = await second.run({ message: "call notes" });
    expect(outputOf(await second.listEvents(one.runId), "notes__echo")).toMatchObject({ content: [{ type: "text", text: "one from before" }] });
    expect(before.sessions.size).toBe(2);

    expect((await first.run({ message: "move notes to the other server" })).status).toBe("completed");
    const two = await second.run({ message: "call notes again" });
    expect(outputOf(await second.listEvents(two.runId), "notes__echo")).toMatchObject({ content: [{ type: "text", text: "two from after" }] });
    await eventually(() => before.ended.length === 2);
    expect(before.sessions.size).toBe(0);
    expect(after.sessions.size).toBe(2);
  }, 30_000);
});
