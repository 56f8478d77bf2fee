import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defineTool, type ConnectionProvider, type JsonValue, type RuntimeLogger } from "@assemblyline-agents/core";
import { startBuilt } from "./support/runtime.js";
import { agentFolder, toolSource } from "./support/agent-folder.js";

const SECRET = "sk-live-url-secret-3f8a1c7d90e2";

/** A provider that records every definition it is asked to describe. */
function recordingProvider(described: unknown[]): ConnectionProvider {
  return {
    describe: async (_name, definition) => {
      described.push(definition);
      return {};
    },
    tools: (name) => ({ [`${name}__ping`]: defineTool({ description: "Ping.", inputSchema: { type: "object" }, execute: async () => ({ pong: true }) }) }),
  };
}

/** An agent whose one tool adds the connection its input names; what it answered, what was stored, and every log line. */
async function connect(spec: Record<string, unknown>, described: unknown[]) {
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname, dynamicConnections: { dynamic: true, approval: true, allowedHosts: ["crm.example.com"], grants: { "crm-token": ["crm.example.com"] } } });
`,
    "tools/connect.ts": toolSource({
      schema: `{ type: "object", properties: { spec: { type: "object" } }, required: ["spec"] }`,
      extra: "defaultEnabled: true,",
      execute: "try { return await ctx.connectionManager.add(input.spec); } catch (error) { return { error: error.code, message: error.message, fix: error.fix }; }",
    }),
  });
  writeFileSync(join(dir, "script.json"), JSON.stringify({ turns: [{ toolCalls: [{ name: "connect", input: { spec } }] }, { text: "done" }] }));
  const logs: unknown[] = [];
  const record = (fields: Record<string, unknown>, msg?: string) => void logs.push({ fields, msg });
  const logger: RuntimeLogger = { debug: record, info: record, warn: record, error: record };
  const { runtime, state } = await startBuilt(dir, { connections: recordingProvider(described), logger });
  const run = await runtime.run({ message: "connect" });
  const output = (await state.listToolCalls(run.runId)).find((call) => call.toolName === "connect")!.output as Record<string, JsonValue>;
  return { run, output, logs, stored: await runtime.state.settings.getSetting(`connections:${runtime.manifest.agent.id}`) };
}

describe("a run's connection spec with a secret in its URL", () => {
  for (const [spec, field, parameter] of [
    [{ kind: "mcp", url: `https://crm.example.com/mcp?api_key=${SECRET}` }, "url", "api_key"],
    [{ kind: "mcp", url: `https://crm.example.com/mcp?region=eu&Access-Token=${SECRET}` }, "url", "Access-Token"],
    [{ kind: "openapi", spec: `https://crm.example.com/openapi.json?sig=${SECRET}` }, "spec", "sig"],
    [{ kind: "openapi", spec: "https://crm.example.com/openapi.json", baseUrl: `https://crm.example.com/v1?client_secret=${SECRET}` }, "baseUrl", "client_secret"],
    [{ kind: "http", baseUrl: `https://crm.example.com/v1?SessionID=${SECRET}`, endpoints: {} }, "baseUrl", "SessionID"],
  ] as const) {
    it(`is refused for ${field} ?${parameter}=, before approval, the provider or the store, naming the parameter and never the value`, async () => {
      const described: unknown[] = [];
      const { run, output, logs, stored } = await connect({ name: "crm", description: "The CRM.", ...spec }, described);
      expect(output).toMatchObject({
        error: "AL_ERR_CONNECTION_DEFINITION",
        message: expect.stringContaining(`connection "crm": ${field} carries a credential in its query string (parameter "${parameter}")`),
        fix: expect.stringContaining(`auth: { grant: "<id>", query: "${parameter}" }`),
      });
      expect(JSON.stringify(output)).not.toContain(SECRET);
      expect(JSON.stringify(logs)).not.toContain(SECRET);
      // Refused before the approval gate: the run was never paused to show it to an approver.
      expect(run.status).toBe("completed");
      expect(described).toEqual([]);
      expect(stored).toBeUndefined();
    });
  }

  it("is refused with the secret in the fragment or the userinfo too", async () => {
    for (const [url, problem] of [
      [`https://crm.example.com/mcp#access_token=${SECRET}`, 'url carries a credential in its fragment (parameter "access_token")'],
      [`https://me:${SECRET}@crm.example.com/mcp`, "url carries credentials in the URL"],
    ] as const) {
      const described: unknown[] = [];
      const { output, stored } = await connect({ name: "crm", kind: "mcp", url }, described);
      expect(output).toMatchObject({ error: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringContaining(problem) });
      expect(JSON.stringify(output)).not.toContain(SECRET);
      expect([described, stored]).toEqual([[], undefined]);
    }
  });

  it("does not echo the query or credentials of a URL it refuses as not http(s)", async () => {
    for (const [url, shown] of [
      [`ftp://crm.example.com/mcp?token=${SECRET}`, '"ftp://crm.example.com/mcp?<query>"'],
      // No scheme: "me:" parses as one, and the password as the rest of an opaque URL.
      [`me:${SECRET}@crm.example.com/mcp`, '"<credentials>@crm.example.com/mcp"'],
    ] as const) {
      const { output } = await connect({ name: "crm", kind: "mcp", url }, []);
      expect(output).toMatchObject({ error: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringContaining(`url ${shown} is not an http(s) URL`) });
      expect(JSON.stringify(output)).not.toContain(SECRET);
    }
  });

  it("passes a spec that sends its grant as a query parameter on, as it is", async () => {
    const described: unknown[] = [];
    const spec = { name: "crm", kind: "mcp", url: "https://crm.example.com/mcp?region=eu", description: "The CRM.", auth: { grant: "crm-token", query: "api_key" } };
    const { run } = await connect(spec, described);
    // Approval is on: the run pauses with the spec for the approver, names only.
    expect(run.status).toBe("waiting_approval");
  });

  it("refuses auth with both a header and a query parameter", async () => {
    const { output } = await connect({ name: "crm", kind: "mcp", url: "https://crm.example.com/mcp", auth: { grant: "crm-token", header: "x-api-key", query: "api_key" } }, []);
    expect(output).toMatchObject({ error: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringContaining("auth.header and auth.query are both set") });
  });
});
