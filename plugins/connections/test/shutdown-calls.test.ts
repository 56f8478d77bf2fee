import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineMcpConnection, noopLogger, type JsonValue, type OutboundResolver } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, scriptedHarness, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { createConnections } from "../src/index.js";
import { startMcpServer } from "./support/servers.js";

const work = mkdtempSync(join(tmpdir(), "al-shutdown-calls-"));
const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
let bundle: RuntimeBundle;

beforeAll(async () => {
  mcp = await startMcpServer();
  const dir = join(work, "agent");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model" });\n`);
  bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
});
afterAll(async () => {
  await mcp?.close();
  rmSync(work, { recursive: true, force: true });
});

const forecastCall = (city: string) => ({ toolCalls: [{ name: "tool_call", input: { name: "weather__get_forecast", input: { city } } as unknown as JsonValue }] });

describe("a run calling an MCP connection after the host closed the connections", () => {
  it("leaves the call open instead of recording a failure, and the next start makes it and completes the run", async () => {
    const state = new InMemoryStateAdapter();
    const host = () => createConnections({ resolve, connections: { weather: defineMcpConnection({ url: `http://mcp.test:${mcp.port}/mcp`, description: "Forecasts" }) } });
    const closing = host();
    const first = new OpenEveRuntime({ ...bundle, state, logger: noopLogger(), connections: closing, agentHarness: scriptedHarness({ turns: [forecastCall("Brest"), { text: "sunny" }] }) });
    // A first run describes the connection in this process, as a host does before its shutdown begins.
    expect((await first.run({ message: "Brest?" })).status).toBe("completed");
    await closing.close?.();
    const late = await first.run({ message: "Brest again?" }).catch((error: unknown) => error);
    expect(late).toMatchObject({ code: "AL_ERR_HOST_DRAINING" });
    const run = (await state.listRuns()).runs.find((listed) => listed.status !== "completed")!;
    const before = await first.listEvents(run.id);
    expect(before.filter((event) => event.type === "tool.completed" && event.data.toolName === "weather__get_forecast")).toHaveLength(0);
    expect(before.some((event) => event.type === "run.completed" || event.type === "run.failed")).toBe(false);

    const callsBefore = mcp.calls.length;
    const next = new OpenEveRuntime({ ...bundle, state, logger: noopLogger(), connections: host(), agentHarness: scriptedHarness({ turns: [forecastCall("Brest"), { text: "sunny" }] }) });
    try {
      const resumed = await next.resume(run.id);
      expect(resumed.status).toBe("completed");
      const completed = (await next.listEvents(run.id)).filter((event) => event.type === "tool.completed" && event.data.toolName === "weather__get_forecast");
      expect(completed).toHaveLength(1);
      expect(completed[0]!.data.output).toMatchObject({ content: [{ type: "text", text: "Sunny in Brest" }] });
      expect(mcp.calls.slice(callsBefore)).toMatchObject([{ city: "Brest" }]);
    } finally {
      await next.close();
    }
  }, 30_000);
});
