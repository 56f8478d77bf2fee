import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AssemblyLineError, type AgentHarness, type JsonValue, type OutboundResolver, type RunEvent, type RuntimeLogger } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, scriptedHarness, type ModelScript, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { EncryptedGrantStore, createConnections } from "../src/index.js";
import { startMcpServer, startOpenApiServer, startRedirector, type TestServer } from "./support/servers.js";

const SECRET = "wx-7f3a9c2e5b1d4088-grant-secret";
const work = mkdtempSync(join(tmpdir(), "al-connections-"));
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
let api: Awaited<ReturnType<typeof startOpenApiServer>>;
let redirector: TestServer;
let grants: EncryptedGrantStore;

/** Test DNS: every name the agents use, and names that resolve to loopback, IPv4-mapped loopback, the metadata address and a private one. */
const resolve: OutboundResolver = async (hostname) => {
  const answers: Record<string, Array<{ address: string; family: number }>> = {
    "mcp.test": [{ address: "127.0.0.1", family: 4 }],
    "api.test": [{ address: "127.0.0.1", family: 4 }],
    "redirect.test": [{ address: "127.0.0.1", family: 4 }],
    "outside.test": [{ address: "127.0.0.1", family: 4 }],
    "loop.public.test": [{ address: "127.0.0.1", family: 4 }],
    "mapped.public.test": [{ address: "::ffff:127.0.0.1", family: 6 }],
    "meta.public.test": [{ address: "169.254.169.254", family: 4 }],
    "private.public.test": [{ address: "10.0.0.5", family: 4 }],
  };
  const found = answers[hostname];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  return found;
};

beforeAll(async () => {
  mcp = await startMcpServer();
  api = await startOpenApiServer();
  // The redirect target is the MCP server under a name outside allowedHosts.
  redirector = await startRedirector(`http://outside.test:${mcp.port}/mcp`);
  grants = new EncryptedGrantStore({ path: join(work, "grants.json"), secretKey: "k".repeat(48) });
  await grants.put("weather-token", SECRET);
});
afterAll(async () => {
  await Promise.all([mcp?.close(), api?.close(), redirector?.close()]);
  rmSync(work, { recursive: true, force: true });
});

const CONNECT_TOOL = `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Connect to a service the user names.",
  inputSchema: { type: "object", properties: { spec: { type: "object" } }, required: ["spec"] },
  defaultEnabled: true,
  async execute(input, ctx) {
    if (!ctx.connectionManager) return { error: "no connectionManager" };
    try {
      return await ctx.connectionManager.add(input.spec);
    } catch (error) {
      if (error && error.$$type) throw error;
      return { error: error.code, message: error.message };
    }
  },
});
`;

async function agent(name: string, policy: string): Promise<RuntimeBundle> {
  const dir = join(work, name);
  const files: Record<string, string> = {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "${name}", model: "test/model"${policy ? `, dynamicConnections: ${policy}` : ""} });\n`,
    "tools/connect.ts": CONNECT_TOOL,
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
}

const logLines: string[] = [];
const logger: RuntimeLogger = Object.fromEntries(
  (["debug", "info", "warn", "error"] as const).map((level) => [level, (fields: Record<string, unknown>, msg?: string) => void logLines.push(JSON.stringify({ level, msg, ...fields }, (_key, value) => (value instanceof Error ? { message: value.message, stack: value.stack } : value)))]),
) as unknown as RuntimeLogger;

/** The engine "crashes" (a state outage) right after the named call returns, once. */
function crashAfter(inner: AgentHarness, toolName: string): AgentHarness {
  let armed = true;
  return {
    name: inner.name,
    runTurn: (input, ctx) =>
      inner.runTurn(input, {
        ...ctx,
        callTool: async (call) => {
          const outcome = await ctx.callTool(call);
          if (armed && call.name === toolName) {
            armed = false;
            throw new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", "simulated crash right after the call");
          }
          return outcome;
        },
      }),
  };
}

function replica(bundle: RuntimeBundle, state: InMemoryStateAdapter, harness: AgentHarness): OpenEveRuntime {
  return new OpenEveRuntime({ ...bundle, state, agentHarness: harness, logger, connections: createConnections({ grants, resolve }) });
}

const outputOf = (events: RunEvent[], toolName: string) => events.find((event) => event.type === "tool.completed" && event.data.toolName === toolName)?.data.output as Record<string, unknown> | undefined;

const ALLOWED = `{ dynamic: true, approval: true, allowedHosts: ["mcp.test", "api.test", "redirect.test", "*.public.test"], grants: { "weather-token": ["mcp.test", "api.test"] } }`;

describe("dynamic connections with approval", () => {
  for (const kind of ["mcp", "openapi"] as const) {
    it(`connects to a local ${kind === "mcp" ? "MCP server (the SDK's)" : "OpenAPI service"} after approval, finds its tool with tool_search, calls it once across a crash and a resume on another replica`, async () => {
      const bundle = await agent(`${kind}-agent`, ALLOWED);
      const spec =
        kind === "mcp"
          ? { name: "weather", kind: "mcp", url: `http://mcp.test:${mcp.port}/mcp`, description: "Forecasts", auth: { grant: "weather-token" } }
          : { name: "forecasts", kind: "openapi", spec: `http://api.test:${api.port}/openapi.json`, description: "Forecast API", auth: { grant: "weather-token", header: "x-api-key" } };
      const toolName = kind === "mcp" ? "weather__get_forecast" : "forecasts__get_forecast";
      const script: ModelScript = {
        turns: [
          { toolCalls: [{ name: "connect", input: { spec } as unknown as JsonValue }] },
          { toolCalls: [{ name: "tool_search", input: { query: "forecast city" } }] },
          { toolCalls: [{ name: "tool_call", input: { name: toolName, input: kind === "mcp" ? { city: "Paris" } : { city: "Lyon", days: 3 } } }] },
          { text: "It is sunny." },
        ],
      };
      const server = kind === "mcp" ? mcp : api;
      const calls = kind === "mcp" ? mcp.calls : api.calls;
      const requestsBefore = server.requests.length;
      const callsBefore = calls.length;
      const state = new InMemoryStateAdapter();

      const first = replica(bundle, state, crashAfter(scriptedHarness(script), "tool_call"));
      const paused = await first.run({ message: "connect to the weather service" });
      expect(paused.status).toBe("waiting_approval");
      expect(server.requests.length).toBe(requestsBefore);
      const requested = (await first.listEvents(paused.runId)).find((event) => event.type === "approval.requested")!;
      expect(requested.data.change).toMatchObject({ action: "add", connection: { name: spec.name, kind } });
      // The approver sees where the calls go, which of the host's secrets they carry, and where that secret may go.
      expect(JSON.stringify(requested.data)).toContain(`sending it the host's grant \\"weather-token\\" (only ever to mcp.test, api.test: a request to another host fails without it)`);

      await expect(first.approve(paused.runId)).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
      expect(calls.length).toBe(callsBefore + 1);

      // Another replica: a fresh provider and tool table, the same state.
      const second = replica(bundle, state, scriptedHarness(script));
      const done = await second.resume(paused.runId);
      expect(done.status).toBe("completed");
      expect(done.response?.text).toBe("It is sunny.");
      expect(calls.length).toBe(callsBefore + 1);

      const events = await second.listEvents(paused.runId);
      const search = outputOf(events, "tool_search") as { results: Array<{ name: string }> };
      expect(search.results.map((hit) => hit.name)).toContain(toolName);
      expect(events.some((event) => event.type === "tool.replayed" && event.data.toolName === toolName)).toBe(true);
      if (kind === "mcp") {
        expect(outputOf(events, toolName)).toMatchObject({ content: [{ type: "text", text: "Sunny in Paris" }] });
        expect(server.requests.slice(requestsBefore).every((request) => request.authorization === `Bearer ${SECRET}`)).toBe(true);
        expect(mcp.calls.at(-1)!.meta).toMatchObject({ "assembly-line/idempotency-key": expect.stringMatching(/^al_/) });
      } else {
        expect(outputOf(events, toolName)).toMatchObject({ status: 200, body: { city: "Lyon", sky: "clear", days: "3" } });
      }
      expect((await second.state.settings.getSetting(`connections:${kind}-agent`)) as Record<string, unknown>).toHaveProperty(spec.name);
      // The replica that never described the connection calls it in a new run, from the persisted record.
      const again = replica(bundle, state, scriptedHarness({ turns: [script.turns[2]!, { text: "again" }] }));
      expect((await again.run({ message: "once more" })).status).toBe("completed");
      expect(calls.length).toBe(callsBefore + 2);
      expect(second.connections.connections()[spec.name]?.tools).toContain(toolName);

      // The grant's secret appears in no stored event, setting, or log line.
      const stored = JSON.stringify({ events, settings: await second.state.settings.getSetting(`connections:${kind}-agent`), toolCalls: await state.listToolCalls(paused.runId) });
      expect(stored).not.toContain(SECRET);
      expect(logLines.join("\n")).not.toContain(SECRET);
    }, 30_000);
  }
});

describe("refusals", () => {
  async function tryConnect(policy: string, spec: Record<string, unknown>): Promise<Record<string, unknown>> {
    const bundle = await agent(`refusal-${Math.random().toString(36).slice(2, 8)}`, policy);
    const runtime = replica(bundle, new InMemoryStateAdapter(), scriptedHarness({ turns: [{ toolCalls: [{ name: "connect", input: { spec } as unknown as JsonValue }] }, { text: "done" }] }));
    const result = await runtime.run({ message: "connect" });
    expect(result.status).toBe("completed");
    return outputOf(await runtime.listEvents(result.runId), "connect")!;
  }
  const NO_APPROVAL = `{ dynamic: true, approval: false, allowedHosts: ["mcp.test", "redirect.test", "*.public.test"] }`;

  it("refuses a host outside allowedHosts before asking for approval", async () => {
    const before = mcp.requests.length;
    expect(await tryConnect(ALLOWED, { name: "outside", kind: "mcp", url: `http://outside.test:${mcp.port}/mcp` })).toMatchObject({ error: "AL_ERR_CONNECTION_REFUSED" });
    expect(mcp.requests.length).toBe(before);
  });

  it("refuses a redirect out of allowedHosts", async () => {
    const before = mcp.requests.length;
    expect(await tryConnect(NO_APPROVAL, { name: "bounced", kind: "mcp", url: `http://redirect.test:${redirector.port}/mcp` })).toMatchObject({ error: "AL_ERR_OUTBOUND_HOST_REFUSED" });
    expect(redirector.requests.length).toBeGreaterThan(0);
    expect(mcp.requests.length).toBe(before);
  });

  for (const [host, address] of [["loop.public.test", "127.0.0.1"], ["mapped.public.test", "::ffff:127.0.0.1"], ["meta.public.test", "169.254.169.254"]]) {
    it(`refuses ${host}, allowed by a wildcard but resolving to ${address}`, async () => {
      const before = mcp.requests.length;
      const refused = await tryConnect(NO_APPROVAL, { name: "sneaky", kind: "mcp", url: `http://${host}:${mcp.port}/mcp` });
      expect(refused).toMatchObject({ error: "AL_ERR_OUTBOUND_ADDRESS_REFUSED" });
      expect(mcp.requests.length).toBe(before);
    });
  }

  for (const [host, address] of [["loop.public.test", "127.0.0.1"], ["meta.public.test", "169.254.169.254"], ["private.public.test", "10.0.0.5"]]) {
    it(`refuses an http connection to ${host}, allowed by a wildcard but resolving to ${address}, when it is added, storing nothing`, async () => {
      const bundle = await agent(`refusal-http-${Math.random().toString(36).slice(2, 8)}`, NO_APPROVAL);
      const state = new InMemoryStateAdapter();
      const spec = { name: "internal", kind: "http", baseUrl: `http://${host}:${api.port}`, endpoints: { get_secret: { method: "GET", path: "/admin", description: "Admin page." } } };
      const runtime = replica(bundle, state, scriptedHarness({ turns: [{ toolCalls: [{ name: "connect", input: { spec } as unknown as JsonValue }] }, { text: "done" }] }));
      const result = await runtime.run({ message: "connect" });
      expect(outputOf(await runtime.listEvents(result.runId), "connect")).toMatchObject({ error: "AL_ERR_OUTBOUND_ADDRESS_REFUSED", message: expect.stringContaining(`host ${host} is resolved to ${address}`) });
      expect(await state.getSetting(`connections:${bundle.manifest.agent.id}`)).toBeUndefined();
    });
  }

  it("refuses an OpenAPI connection whose baseUrl host, allowed by a wildcard, resolves to the metadata address, when it is added, storing nothing", async () => {
    const bundle = await agent(`refusal-openapi-${Math.random().toString(36).slice(2, 8)}`, `{ dynamic: true, approval: false, allowedHosts: ["api.test", "*.public.test"] }`);
    const state = new InMemoryStateAdapter();
    const spec = { name: "metadata", kind: "openapi", spec: `http://api.test:${api.port}/openapi.json`, baseUrl: `http://meta.public.test:${api.port}/api` };
    const runtime = replica(bundle, state, scriptedHarness({ turns: [{ toolCalls: [{ name: "connect", input: { spec } as unknown as JsonValue }] }, { text: "done" }] }));
    const result = await runtime.run({ message: "connect" });
    expect(outputOf(await runtime.listEvents(result.runId), "connect")).toMatchObject({ error: "AL_ERR_OUTBOUND_ADDRESS_REFUSED", message: expect.stringContaining("host meta.public.test is resolved to 169.254.169.254") });
    expect(await state.getSetting(`connections:${bundle.manifest.agent.id}`)).toBeUndefined();
  });

  it("refuses a run's MCP spec that carries a local command, and never starts it, even with a forged brand", async () => {
    const marker = join(work, `started-${Math.random().toString(36).slice(2, 8)}`);
    const command = { command: process.execPath, args: ["-e", `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "ran")`] };
    for (const forged of [{}, { $$type: "assembly-line.connection", $$version: 1 }]) {
      const refused = await tryConnect(NO_APPROVAL, { name: "local", kind: "mcp", url: `http://mcp.test:${mcp.port}/mcp`, ...command, ...forged });
      expect(refused).toMatchObject({ error: "AL_ERR_CONNECTION_DEFINITION" });
      expect(refused.message).toMatch(/"command", "args".* are not fields of a run's mcp connection \(a run may only add remote services/);
    }
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses a run's spec with a field no connection reads, naming it", async () => {
    const refused = await tryConnect(NO_APPROVAL, { name: "weather", kind: "mcp", url: `http://mcp.test:${mcp.port}/mcp`, headers: { "x-api-key": "k" } });
    expect(refused).toMatchObject({ error: "AL_ERR_CONNECTION_DEFINITION" });
    expect(refused.message).toMatch(/"headers" is not a field of a run's mcp connection/);
  });

  it("offers no connectionManager when dynamic connections are off", async () => {
    expect(await tryConnect("", { name: "weather", kind: "mcp", url: `http://mcp.test:${mcp.port}/mcp` })).toEqual({ error: "no connectionManager" });
    expect(await tryConnect(`{ dynamic: false, allowedHosts: ["mcp.test"] }`, { name: "weather", kind: "mcp", url: `http://mcp.test:${mcp.port}/mcp` })).toEqual({ error: "no connectionManager" });
  });
});

describe("the host's grants a run's connection may use", () => {
  const GRANTS = `{ dynamic: true, approval: false, allowedHosts: ["mcp.test", "outside.test"], grants: { "weather-token": ["mcp.test"] } }`;

  async function connectAndCall(policy: string, spec: Record<string, unknown>, tool: string) {
    const bundle = await agent(`grants-${Math.random().toString(36).slice(2, 8)}`, policy);
    const state = new InMemoryStateAdapter();
    const script: ModelScript = { turns: [{ toolCalls: [{ name: "connect", input: { spec } as unknown as JsonValue }] }, { toolCalls: [{ name: "tool_call", input: { name: tool, input: { city: "Oslo" } } }] }, { text: "done" }] };
    const runtime = replica(bundle, state, scriptedHarness(script));
    const result = await runtime.run({ message: "connect" });
    expect(result.status).toBe("completed");
    const events = await runtime.listEvents(result.runId);
    return { added: outputOf(events, "connect")!, stored: await runtime.state.settings.getSetting(`connections:${bundle.manifest.agent.id}`) };
  }

  it("refuses a grant agent.ts does not list in dynamicConnections.grants, sending nothing", async () => {
    const before = mcp.requests.length;
    for (const policy of [`{ dynamic: true, approval: false, allowedHosts: ["mcp.test"] }`, `{ dynamic: true, approval: false, allowedHosts: ["mcp.test"], grants: { "other-token": ["mcp.test"] } }`]) {
      const { added, stored } = await connectAndCall(policy, { name: "notes", kind: "mcp", url: `http://mcp.test:${mcp.port}/mcp`, auth: { grant: "weather-token" } }, "notes__get_forecast");
      expect(added).toMatchObject({ error: "AL_ERR_CONNECTION_REFUSED", message: expect.stringContaining(`grant "weather-token" is not listed in agent.ts dynamicConnections.grants`) });
      expect(added.message).toContain(`dynamicConnections: { grants: { "weather-token": ["api.example.com"] } }`);
      expect(stored).toBeUndefined();
    }
    expect(mcp.requests.length).toBe(before);
  });

  it("refuses a listed grant for a service on another allowed host, sending nothing there", async () => {
    const before = mcp.requests.length;
    const { added, stored } = await connectAndCall(GRANTS, { name: "notes", kind: "mcp", url: `http://outside.test:${mcp.port}/mcp`, auth: { grant: "weather-token" } }, "notes__get_forecast");
    expect(added).toMatchObject({ error: "AL_ERR_CONNECTION_REFUSED", message: expect.stringContaining(`grant "weather-token" may be sent only to mcp.test (agent.ts dynamicConnections.grants), not to outside.test`) });
    expect(stored).toBeUndefined();
    expect(mcp.requests.length).toBe(before);
  });

  it("sends a listed grant to a host it is bound to", async () => {
    const before = mcp.requests.length;
    const { added } = await connectAndCall(GRANTS, { name: "forecasts", kind: "mcp", url: `http://mcp.test:${mcp.port}/mcp`, auth: { grant: "weather-token" } }, "forecasts__get_forecast");
    expect(added).toMatchObject({ name: "forecasts", source: "dynamic" });
    expect(mcp.requests.length).toBeGreaterThan(before);
    expect(mcp.requests.slice(before).every((request) => request.authorization === `Bearer ${SECRET}`)).toBe(true);
  });
});
