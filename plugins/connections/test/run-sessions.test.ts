import { afterEach, describe, expect, it } from "vitest";
import { defineMcpConnection, isAssemblyLineError, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { createConnections, type ConnectionsOptions } from "../src/index.js";
import { eventually, startSessionServer, type SessionServer } from "./support/session-server.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["mcp.test"], onlyAllowedHosts: true };
const callOf = (runId: string) => ({ runId, signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${runId}_${scope}` }) as never;

/** What each test started, stopped after it whatever happened. */
const started: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close();
});

async function echoServer(): Promise<SessionServer> {
  const server = await startSessionServer("echo-server");
  started.push({ close: () => server.stop() });
  return server;
}

async function echoTools(server: SessionServer, options: Omit<ConnectionsOptions, "resolve"> = {}) {
  const provider = createConnections({ resolve, ...options });
  started.push({ close: async () => provider.close?.() });
  const definition = defineMcpConnection({ url: server.url, description: "Echo" });
  const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
  const echo = async (runId: string, word: string) => expect(await tools.echo__echo!.execute({ word }, callOf(runId))).toMatchObject({ content: [{ type: "text", text: `${word} from echo-server` }] });
  return { provider, definition, echo };
}

describe('mcpSessions: "run"', () => {
  it("gives each run a session of its own, reused by that run's calls, and ends the listing's session once the tools are read", async () => {
    const server = await echoServer();
    const { echo } = await echoTools(server, { mcpSessions: "run" });
    const listing = server.opened[0]!;
    await eventually(() => server.ended.includes(listing));

    await echo("run-a", "one");
    await echo("run-b", "two");
    await echo("run-a", "three");
    const [, first, second] = server.opened;
    expect(server.opened).toHaveLength(3);
    expect([...server.sessions.keys()].sort()).toEqual([first, second].sort());
  }, 20_000);

  it("ends a run's session once the run has not used it for mcpSessionIdleMs, and a later call of the run opens another", async () => {
    const server = await echoServer();
    const { echo } = await echoTools(server, { mcpSessions: "run", mcpSessionIdleMs: 200 });
    await echo("run-a", "one");
    const session = server.opened[1]!;
    await eventually(() => server.ended.includes(session));
    expect(server.sessions.has(session)).toBe(false);

    await echo("run-a", "two");
    expect(server.opened).toHaveLength(3);
    expect(server.sessions.has(server.opened[2]!)).toBe(true);
  }, 20_000);

  it("does not end a run's session while one of its calls is in flight, however long it takes", async () => {
    const server = await echoServer();
    const { provider, definition, echo } = await echoTools(server, { mcpSessions: "run", mcpSessionIdleMs: 100 });
    const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
    const inFlight = tools.echo__wait!.execute({}, callOf("run-a"));
    await eventually(() => server.waiting === 1);
    const session = server.opened.at(-1)!;
    // A call of the run that ends meanwhile leaves the session idle only if nothing else is under way.
    await echo("run-a", "meanwhile");
    await new Promise((done) => setTimeout(done, 400));
    expect(server.ended).not.toContain(session);
    const opened = server.opened.length;
    await echo("run-a", "still");
    expect(server.opened).toHaveLength(opened);
    server.finishWaits();
    await inFlight;
    await eventually(() => server.ended.includes(session));
  }, 20_000);

  it("ends every run's session when the connection is released", async () => {
    const server = await echoServer();
    const { provider, definition, echo } = await echoTools(server, { mcpSessions: "run" });
    await echo("run-a", "one");
    await echo("run-b", "two");
    await provider.release!("echo", definition, policy);
    expect(server.sessions.size).toBe(0);
    expect(server.ended).toEqual(expect.arrayContaining(server.opened));
  }, 20_000);
});

describe("mcpSessions by default", () => {
  it("shares one session per connection among runs", async () => {
    const server = await echoServer();
    const { echo } = await echoTools(server);
    await echo("run-a", "one");
    await echo("run-b", "two");
    expect(server.opened).toHaveLength(1);
    expect(server.sessions.size).toBe(1);
  }, 20_000);

  it("refuses mcpSessionIdleMs without sessions of each run's own, and an unknown mcpSessions", () => {
    const refusal = (options: ConnectionsOptions) => {
      try {
        createConnections(options);
      } catch (error) {
        return error;
      }
      throw new Error("createConnections accepted the options");
    };
    const idle = refusal({ mcpSessionIdleMs: 1_000 });
    expect(isAssemblyLineError(idle, "AL_ERR_CONNECTION_DEFINITION"), String(idle)).toBe(true);
    expect(String(idle)).toMatch(/mcpSessionIdleMs.*mcpSessions is "shared"/);
    const unknown = refusal({ mcpSessions: "conversation" as never });
    expect(isAssemblyLineError(unknown, "AL_ERR_CONNECTION_DEFINITION"), String(unknown)).toBe(true);
    expect(String(unknown)).toMatch(/mcpSessions/);
  });
});
