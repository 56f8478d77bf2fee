import { afterEach, describe, expect, it } from "vitest";
import { defineMcpConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { createConnections, type ConnectionsOptions } from "../src/index.js";
import { eventually, startSessionServer, type SessionServer } from "./support/session-server.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["mcp.test"], onlyAllowedHosts: true };
const callOf = (runId: string, signal = new AbortController().signal) => ({ runId, signal, idempotencyKey: (scope: string) => `al_${runId}_${scope}` }) as never;
/** Room for a short result; a 200 000-character word is cut long before its end. */
const LIMIT = 2_000;
const LONG_WORD = "x".repeat(200_000);
const WAITED = { content: [{ type: "text", text: "waited from echo-server" }] };

/** What each test started, stopped after it whatever happened. */
const started: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close();
});

async function echoTools(options: Omit<ConnectionsOptions, "resolve"> = {}) {
  const server = await startSessionServer("echo-server");
  started.push({ close: () => server.stop() });
  const provider = createConnections({ resolve, maxResponseBytes: LIMIT, ...options });
  started.push({ close: async () => provider.close?.() });
  const definition = defineMcpConnection({ url: server.url, description: "Echo" });
  const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
  return { server, provider, tools };
}

/** Run A's `wait` call, held in flight on the server until finishWaits() (wrapped: an async function would wait for it). */
async function waitInFlight(server: SessionServer, tools: Awaited<ReturnType<typeof echoTools>>["tools"], runId = "run-a") {
  const waiting = server.waiting;
  const call = Promise.resolve(tools.echo__wait!.execute({}, callOf(runId)));
  await eventually(() => server.waiting === waiting + 1);
  return { call };
}

describe("one run's failed call on the shared MCP session", () => {
  it("an answer cut past the cap for run B does not fail run A's call in flight, and the next call opens a new session", async () => {
    const { server, tools } = await echoTools();
    const { call: inFlight } = await waitInFlight(server, tools);
    expect(JSON.stringify(await tools.echo__echo!.execute({ word: LONG_WORD }, callOf("run-b")))).toMatch(/answered more than 2000 bytes/);
    server.finishWaits();
    expect(await inFlight).toMatchObject(WAITED);
    expect(await tools.echo__echo!.execute({ word: "next" }, callOf("run-b"))).toMatchObject({ content: [{ text: "next from echo-server" }] });
    expect(server.opened).toHaveLength(2);
  }, 20_000);

  it("a call made with an already-aborted signal (run B cancelled) fails alone: run A's call in flight finishes, on the same session", async () => {
    const { server, tools } = await echoTools();
    const { call: inFlight } = await waitInFlight(server, tools);
    const cancelled = new AbortController();
    cancelled.abort(new Error("run cancelled"));
    expect(await tools.echo__echo!.execute({ word: "b" }, callOf("run-b", cancelled.signal))).toMatchObject({ error: expect.stringContaining("run cancelled") });
    server.finishWaits();
    expect(await inFlight).toMatchObject(WAITED);
    expect(await tools.echo__echo!.execute({ word: "next" }, callOf("run-b"))).toMatchObject({ content: [{ text: "next from echo-server" }] });
    expect(server.opened).toHaveLength(1);
  }, 20_000);

  it("a call aborted in flight (run B cancelled) fails alone: run A's call in flight finishes, on the same session", async () => {
    const { server, tools } = await echoTools();
    const { call: inFlight } = await waitInFlight(server, tools);
    const cancelled = new AbortController();
    const b = Promise.resolve(tools.echo__wait!.execute({}, callOf("run-b", cancelled.signal)));
    await eventually(() => server.waiting === 2);
    cancelled.abort(new Error("run cancelled"));
    expect(await b).toMatchObject({ error: expect.stringContaining("run cancelled") });
    server.finishWaits();
    expect(await inFlight).toMatchObject(WAITED);
    expect(await tools.echo__echo!.execute({ word: "next" }, callOf("run-b"))).toMatchObject({ content: [{ text: "next from echo-server" }] });
    expect(server.opened).toHaveLength(1);
  }, 20_000);
});

describe("a dropped MCP client's session", () => {
  it("is ended on the server (DELETE) after a cut answer, once the calls in flight on it have finished", async () => {
    const { server, tools } = await echoTools();
    const { call: inFlight } = await waitInFlight(server, tools);
    const first = server.opened[0]!;
    await tools.echo__echo!.execute({ word: LONG_WORD }, callOf("run-b"));
    await new Promise((done) => setTimeout(done, 200));
    expect(server.ended).toEqual([]);
    server.finishWaits();
    expect(await inFlight).toMatchObject(WAITED);
    await eventually(() => server.ended.includes(first));
    expect(server.sessions.has(first)).toBe(false);
  }, 20_000);

  it("is not asked to end on a server that no longer knows it (404): the client is closed and a new session opened", async () => {
    const { server, tools } = await echoTools();
    const first = server.opened[0]!;
    // The server lost the session (a restart keeping its address, an expiry).
    server.sessions.delete(first);
    expect(await tools.echo__echo!.execute({ word: "again" }, callOf("run-a"))).toMatchObject({ content: [{ text: "again from echo-server" }] });
    expect(server.opened).toHaveLength(2);
    await new Promise((done) => setTimeout(done, 200));
    expect(server.ended).toEqual([]);
  }, 20_000);
});
