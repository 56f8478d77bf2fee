import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve as resolvePath } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineMcpConnection, noopLogger, type JsonValue, type OutboundResolver, type RunEvent } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, scriptedHarness, type ModelScript, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { EncryptedGrantStore, createConnections } from "../src/index.js";
import { startOpenApiServer, startRedirector, type TestServer } from "./support/servers.js";

const work = mkdtempSync(join(tmpdir(), "al-static-connections-"));
const callsFile = join(work, "calls.log");
const SECRET = "forecast-key-0b5e8d1c77a24f19";
let api: Awaited<ReturnType<typeof startOpenApiServer>>;
let redirector: TestServer;
let grants: EncryptedGrantStore;
const resolve: OutboundResolver = async (hostname) => {
  if (hostname === "api.test" || hostname === "redirect.test" || hostname === "outside.test") return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
};

beforeAll(async () => {
  api = await startOpenApiServer();
  redirector = await startRedirector(`http://outside.test:${api.port}/api/forecast/Nice`);
  grants = new EncryptedGrantStore({ path: join(work, "grants.json"), secretKey: "z".repeat(40) });
  await grants.put("forecast-key", SECRET);
});
afterAll(async () => {
  await Promise.all([api?.close(), redirector?.close()]);
  rmSync(work, { recursive: true, force: true });
});

async function agentWith(files: Record<string, string>): Promise<RuntimeBundle> {
  const dir = mkdtempSync(join(work, "agent-"));
  for (const [file, text] of Object.entries({ "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model" });\n`, ...files })) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
}

const outputs = (events: RunEvent[]) => Object.fromEntries(events.filter((event) => event.type === "tool.completed").map((event) => [event.data.toolName, event.data.output])) as Record<string, Record<string, unknown>>;

describe("host-declared and connections/ connections", () => {
  it("serves a host's MCP server over stdio, with approval decided per tool by a function", async () => {
    const connections = createConnections({
      connections: {
        calc: defineMcpConnection({
          command: process.execPath,
          args: [resolvePath(import.meta.dirname, "fixtures/stdio-server.mjs")],
          env: { CALLS_FILE: callsFile },
          description: "A calculator",
          approval: ({ tool }) => tool === "wipe",
        }),
      },
    });
    const script: ModelScript = {
      turns: [
        { toolCalls: [{ name: "tool_search", input: { query: "add numbers" } }] },
        { toolCalls: [{ name: "tool_call", input: { name: "calc__add", input: { a: 2, b: 40 } } }] },
        { toolCalls: [{ name: "tool_call", input: { name: "calc__wipe", input: {} } }] },
        { text: "done" },
      ],
    };
    const runtime = new OpenEveRuntime({ ...(await agentWith({})), state: new InMemoryStateAdapter(), agentHarness: scriptedHarness(script), logger: noopLogger(), connections });
    try {
      const paused = await runtime.run({ message: "compute" });
      expect(paused.status).toBe("waiting_approval");
      expect(paused.pendingApprovals?.map((pending) => pending.toolName)).toEqual(["calc__wipe"]);
      expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["add"]);
      const done = await runtime.approve(paused.runId);
      expect(done.status).toBe("completed");
      const results = outputs(await runtime.listEvents(paused.runId));
      expect(results.calc__add).toMatchObject({ content: [{ type: "text", text: "42" }] });
      expect(results.calc__wipe).toMatchObject({ content: [{ type: "text", text: "wiped" }] });
      expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["add", "wipe"]);
    } finally {
      await runtime.close();
    }
  }, 30_000);

  it("compiles connections/<name>.ts into the manifest and calls its endpoints with the grant's secret, refusing a redirect out", async () => {
    const bundle = await agentWith({
      "connections/forecast.ts": `import { defineHttpConnection } from "@assemblyline-agents/core";
export default defineHttpConnection({
  baseUrl: "http://api.test:${api.port}",
  description: "Forecasts",
  auth: { grant: "forecast-key", header: "x-api-key" },
  endpoints: { get_forecast: { method: "GET", path: "/api/forecast/{city}", description: "Forecast for a city" } },
});
`,
      "connections/bouncer.ts": `import { defineHttpConnection } from "@assemblyline-agents/core";
export default defineHttpConnection({
  baseUrl: "http://redirect.test:${redirector.port}",
  description: "Redirects elsewhere",
  endpoints: { follow: { method: "GET", path: "/x", description: "Follow a redirect" } },
});
`,
    });
    expect(bundle.manifest.connections).toEqual([
      { name: "bouncer", source: { file: "connections/bouncer.ts", hash: expect.any(String) }, kind: "http", description: "Redirects elsewhere", grant: null },
      { name: "forecast", source: { file: "connections/forecast.ts", hash: expect.any(String) }, kind: "http", description: "Forecasts", grant: "forecast-key" },
    ]);
    const script: ModelScript = {
      turns: [
        { toolCalls: [{ name: "tool_call", input: { name: "forecast__get_forecast", input: { city: "Brest", query: { days: "2" } } } as unknown as JsonValue }] },
        { toolCalls: [{ name: "tool_call", input: { name: "bouncer__follow", input: {} } }] },
        { text: "done" },
      ],
    };
    const state = new InMemoryStateAdapter();
    const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: scriptedHarness(script), logger: noopLogger(), connections: createConnections({ grants, resolve }) });
    const before = api.requests.length;
    const result = await runtime.run({ message: "forecast" });
    expect(result.status).toBe("completed");
    const results = outputs(await runtime.listEvents(result.runId));
    expect(results.forecast__get_forecast).toMatchObject({ status: 200, body: { city: "Brest", days: "2" } });
    expect(results.bouncer__follow).toMatchObject({ code: "AL_ERR_OUTBOUND_HOST_REFUSED" });
    // The forecast request only: the redirect target was never reached.
    expect(api.requests.slice(before).map((request) => request.path)).toEqual(["/api/forecast/Brest?days=2"]);
    expect(JSON.stringify(await runtime.listEvents(result.runId))).not.toContain(SECRET);
  }, 30_000);

  it("answers a call whose grant is missing with AL_ERR_GRANT_MISSING, without sending it", async () => {
    const bundle = await agentWith({
      "connections/forecast.ts": `import { defineHttpConnection } from "@assemblyline-agents/core";
export default defineHttpConnection({ baseUrl: "http://api.test:${api.port}", description: "Forecasts", auth: { grant: "nope" }, endpoints: { get_forecast: { method: "GET", path: "/api/forecast/{city}", description: "Forecast" } } });
`,
    });
    const runtime = new OpenEveRuntime({
      ...bundle,
      state: new InMemoryStateAdapter(),
      agentHarness: scriptedHarness({ turns: [{ toolCalls: [{ name: "tool_call", input: { name: "forecast__get_forecast", input: { city: "Brest" } } }] }, { text: "done" }] }),
      logger: noopLogger(),
      connections: createConnections({ grants, resolve }),
    });
    const before = api.requests.length;
    const result = await runtime.run({ message: "forecast" });
    expect(outputs(await runtime.listEvents(result.runId)).forecast__get_forecast).toMatchObject({ code: "AL_ERR_GRANT_MISSING" });
    expect(api.requests.length).toBe(before);
  });
});

describe("the encrypted grant store", () => {
  it("keeps secrets encrypted at rest and readable only with the same key", async () => {
    const path = join(work, "store", "grants.json");
    const store = new EncryptedGrantStore({ path, env: { ASSEMBLY_LINE_SECRET_KEY: "a".repeat(32) } });
    await store.put("github", "ghp_plaintext_token_value");
    expect(existsSync(path)).toBe(true);
    expect(readFileSync(path, "utf8")).not.toContain("ghp_plaintext_token_value");
    expect(await new EncryptedGrantStore({ path, secretKey: "a".repeat(32) }).get("github")).toBe("ghp_plaintext_token_value");
    await expect(new EncryptedGrantStore({ path, secretKey: "b".repeat(32) }).get("github")).rejects.toMatchObject({ code: "AL_ERR_GRANT_KEY" });
    // A sealed value moved under another id does not decrypt: the id is bound to it.
    const sealed = JSON.parse(readFileSync(path, "utf8"));
    writeFileSync(path, JSON.stringify({ ...sealed, gitlab: sealed.github }));
    await expect(store.get("gitlab")).rejects.toMatchObject({ code: "AL_ERR_GRANT_KEY" });
    await store.delete("github");
    expect(await store.get("github")).toBeUndefined();
  });

  it("refuses to start without a key of at least 32 characters", () => {
    expect(() => new EncryptedGrantStore({ path: join(work, "x.json"), env: {} })).toThrow(/AL_ERR_GRANT_KEY/);
    expect(() => new EncryptedGrantStore({ path: join(work, "x.json"), secretKey: "short" })).toThrow(/AL_ERR_GRANT_KEY/);
  });
});
