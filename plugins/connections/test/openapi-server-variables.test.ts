import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineOpenApiConnection, noopLogger, type JsonValue, type OutboundResolver } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, scriptedHarness } from "@assemblyline-agents/runtime";
import { createConnections } from "../src/index.js";
import { startOpenApiServer } from "./support/servers.js";

const work = mkdtempSync(join(tmpdir(), "al-openapi-server-variables-"));
let api: Awaited<ReturnType<typeof startOpenApiServer>>;
const resolve: OutboundResolver = async (hostname) => {
  if (hostname === "eu.api.test") return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
};

beforeAll(async () => {
  api = await startOpenApiServer();
});
afterAll(async () => {
  await api?.close();
  rmSync(work, { recursive: true, force: true });
});

/** The forecast service's document given inline, served at `server` (its variables' defaults filled in). */
const forecastDocument = (server: { url: string; variables?: Record<string, { default: string }> }) => ({
  openapi: "3.0.3",
  info: { title: "Forecasts", version: "1.0.0" },
  servers: [server],
  paths: {
    "/forecast/{city}": {
      get: { operationId: "getForecast", parameters: [{ name: "city", in: "path", required: true, schema: { type: "string" } }], responses: { "200": { description: "ok" } } },
    },
  },
});

/** One run of a host with the `forecast` connection, calling its tool for Brest: what the call returned. */
async function forecastThrough(server: Parameters<typeof forecastDocument>[0]): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(work, "agent-"));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model" });\n`);
  const connections = createConnections({ resolve, connections: { forecast: defineOpenApiConnection({ spec: forecastDocument(server), description: "Forecasts" }) } });
  const runtime = new OpenEveRuntime({
    ...(await loadRuntimeBundle((await buildAgent(dir)).artifactRoot)),
    state: new InMemoryStateAdapter(),
    logger: noopLogger(),
    connections,
    agentHarness: scriptedHarness({ turns: [{ toolCalls: [{ name: "tool_call", input: { name: "forecast__get_forecast", input: { city: "Brest" } } as unknown as JsonValue }] }, { text: "done" }] }),
  });
  try {
    const result = await runtime.run({ message: "forecast" });
    const completed = (await runtime.listEvents(result.runId)).find((event) => event.type === "tool.completed" && event.data.toolName === "forecast__get_forecast");
    return completed?.data.output as Record<string, unknown>;
  } finally {
    await runtime.close();
  }
}

describe("a host's inline OpenAPI document whose server URL has variables", () => {
  it("reaches the host the variables' defaults name ({region})", async () => {
    const output = await forecastThrough({ url: `http://{region}.api.test:${api.port}/api`, variables: { region: { default: "eu" } } });
    expect(output).toMatchObject({ status: 200, body: { city: "Brest", sky: "clear" } });
  });

  it("reaches it when a variable is the port ({port}), which leaves the template no URL until it is filled in", async () => {
    const output = await forecastThrough({ url: "http://eu.api.test:{port}/api", variables: { port: { default: String(api.port) } } });
    expect(output).toMatchObject({ status: 200, body: { city: "Brest", sky: "clear" } });
  });

  it("is refused when the host declares it if a variable has no default, so the server is no URL", () => {
    const definition = defineOpenApiConnection({ spec: forecastDocument({ url: "http://{region}.api.test/api" }), description: "Forecasts" });
    expect(() => createConnections({ resolve, connections: { forecast: definition } })).toThrow(
      expect.objectContaining({ code: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringContaining('connection "forecast": the document\'s server "http://{region}.api.test/api"') }),
    );
  });
});
