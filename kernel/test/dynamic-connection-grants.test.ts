import { describe, expect, it } from "vitest";
import { defineHttpConnection, defineTool, type ConnectionDefinition, type ConnectionPolicy, type ConnectionProvider, type JsonValue, type RuntimeLogger } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, buildAgent, noopLogger } from "@assemblyline-agents/runtime";
import { ConnectionRegistry } from "../src/connections/connection-registry.js";
import { ToolTable } from "../src/run/tool-table.js";
import { agentFolder } from "./support/agent-folder.js";

const agentWith = (policy: string) => agentFolder({ "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", dynamicConnections: ${policy} });\n` });

describe("agent.ts dynamicConnections.grants", () => {
  it("is compiled into the manifest, host names in lower case", async () => {
    const { manifest } = await buildAgent(agentWith(`{ dynamic: true, allowedHosts: ["api.github.com", "*.example.com"], grants: { github: ["API.github.com"], crm: ["crm.example.com", "*.eu.example.com"] } }`));
    expect(manifest.agent.dynamicConnections).toEqual({
      dynamic: true,
      approval: true,
      allowedHosts: ["api.github.com", "*.example.com"],
      grants: { github: ["api.github.com"], crm: ["crm.example.com", "*.eu.example.com"] },
    });
  });

  for (const [grants, problem] of [
    [`{ github: ["collector.example.net"] }`, /dynamicConnections\.grants\["github"\] names collector\.example\.net, which dynamicConnections\.allowedHosts does not allow/],
    [`{ github: ["*.github.com"] }`, /grants\["github"\] names \*\.github\.com, which dynamicConnections\.allowedHosts does not allow/],
    [`{ github: [] }`, /grants\["github"\] must be a non-empty list of host names/],
    [`{ github: ["https://api.github.com"] }`, /grants\["github"\] must be a non-empty list of host names \(no scheme, port or path\)/],
    [`["github"]`, /dynamicConnections\.grants must be an object/],
  ] as const) {
    it(`refuses grants ${grants} when the agent is built, saying what to fix`, async () => {
      const error = (await buildAgent(agentWith(`{ dynamic: true, allowedHosts: ["api.github.com"], grants: ${grants} }`)).catch((caught: unknown) => caught)) as Error & { code: string };
      expect(error).toMatchObject({ code: "AL_ERR_AGENT_DEFINITION", message: expect.stringMatching(problem) });
      expect(error.message).toMatch(/fix: /);
    });
  }
});

/** A registry whose provider declares "crm" (its describe failing while `down`) and whose folder declares "billing". */
function registry(options: { down?: boolean; settings?: InMemoryStateAdapter; grants?: Record<string, string[]>; logger?: RuntimeLogger } = {}) {
  const described: Array<{ name: string; policy: ConnectionPolicy }> = [];
  const provided: Array<{ name: string; policy: ConnectionPolicy }> = [];
  const endpoint = { ping: { method: "GET" as const, path: "/ping", description: "Ping" } };
  const provider: ConnectionProvider = {
    connections: { crm: defineHttpConnection({ description: "The host's CRM.", baseUrl: "https://crm.example.com", endpoints: endpoint }) },
    describe: async (name, _definition, policy) => {
      if (options.down && name === "crm") throw new Error("connect ECONNREFUSED");
      described.push({ name, policy });
      return {};
    },
    tools: (name, definition, _record, policy) => (provided.push({ name, policy }), { [`${name}__ping`]: defineTool({ description: `Ping ${"name" in definition ? "the run's" : "the host's"} ${name}.`, inputSchema: { type: "object" }, execute: async () => ({}) }) }),
  };
  const settings = options.settings ?? new InMemoryStateAdapter();
  const folder: Record<string, ConnectionDefinition> = { billing: defineHttpConnection({ description: "Billing.", baseUrl: "https://billing.example.com", endpoints: endpoint }) };
  const table = new ToolTable();
  const connections = new ConnectionRegistry({
    provider,
    folder,
    table,
    settings,
    agentId: "agent",
    dynamic: { dynamic: true, approval: false, allowedHosts: ["run.example.com", "other.example.com"], ...(options.grants ? { grants: options.grants } : {}) },
    logger: options.logger ?? noopLogger(),
  });
  const gate = { approved: false, require: () => undefined };
  const manager = connections.manager(gate, "run_1");
  return { connections, manager, table, settings, described, provided };
}

const runSpec = (name: string, extra: Record<string, unknown> = {}) => ({ name, kind: "http" as const, baseUrl: "https://run.example.com", endpoints: { ping: { method: "GET" as const, path: "/ping", description: "Ping" } }, ...extra });

describe("a run's connection and the names the host declares", () => {
  it("refuses a name the host declares, even while the host's connection could not be described", async () => {
    const { connections, manager, settings } = registry({ down: true });
    await connections.refresh();
    for (const name of ["crm", "billing"]) {
      await expect(manager.add(runSpec(name))).rejects.toMatchObject({ code: "AL_ERR_CONNECTION_REFUSED", message: expect.stringContaining(`"${name}" is the name of a connection the host or the agent folder declares`) });
    }
    expect(await settings.getSetting("connections:agent")).toBeUndefined();
  });

  it("never lets a stored run's connection replace the host's under its name, warning once", async () => {
    const warnings: Array<Record<string, unknown>> = [];
    const logger = { ...noopLogger(), warn: (fields: Record<string, unknown>) => void warnings.push(fields) } as RuntimeLogger;
    const { connections, manager, table, settings } = registry({ logger });
    // Stored before the host declared "crm" (a version that let runs take any free name).
    await settings.putSetting("connections:agent", { crm: { spec: runSpec("crm"), record: {}, addedBy: "run_0" } } as unknown as JsonValue, { actor: "test", reason: "older version" });
    await connections.refresh();
    await connections.refresh();
    expect(connections.connections().crm).toMatchObject({ source: "static", description: "The host's CRM." });
    expect(table.get("crm__ping")?.definition.description).toBe("Ping the host's crm.");
    expect(warnings.filter((fields) => fields.event === "connection.name_taken")).toEqual([{ event: "connection.name_taken", connection: "crm", addedBy: "run_0" }]);
    // Removing the stored entry leaves the host's connection as it is.
    expect(await manager.remove("crm")).toEqual({ removed: true });
    expect(table.has("crm__ping")).toBe(true);
  });
});

describe("a run's connection and the host's grants", () => {
  it("refuses a grant dynamicConnections.grants does not list, naming it and how to list it", async () => {
    const { manager, described } = registry({ grants: { crm_token: ["run.example.com"] } });
    await expect(manager.add(runSpec("notes", { auth: { grant: "github" } }))).rejects.toMatchObject({
      code: "AL_ERR_CONNECTION_REFUSED",
      message: expect.stringMatching(/grant "github" is not listed in agent\.ts dynamicConnections\.grants \(it lists "crm_token"\)[\s\S]*fix: .*dynamicConnections: \{ grants: \{ "github": \["api\.example\.com"\] \} \}/),
    });
    expect(described.filter((entry) => entry.name === "notes")).toEqual([]);
  });

  it("hands the provider the hosts the grant is bound to, in this process and in the next", async () => {
    const bound = { allowedHosts: ["run.example.com", "other.example.com"], onlyAllowedHosts: true, grantHosts: ["run.example.com"] };
    const first = registry({ grants: { crm_token: ["run.example.com"] } });
    await first.manager.add(runSpec("notes", { auth: { grant: "crm_token" } }));
    await first.manager.add(runSpec("open"));
    expect(first.described.find((entry) => entry.name === "notes")!.policy).toEqual(bound);
    expect(first.described.find((entry) => entry.name === "open")!.policy).not.toHaveProperty("grantHosts");
    // Another process, whose agent.ts no longer lists the grant: the connection is served, and its grant may go nowhere.
    const next = registry({ settings: first.settings, grants: {} });
    await next.connections.refresh();
    expect(next.provided.find((entry) => entry.name === "notes")!.policy).toEqual({ ...bound, grantHosts: [] });
  });
});
