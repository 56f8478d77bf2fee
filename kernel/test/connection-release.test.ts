import { describe, expect, it } from "vitest";
import { defineTool, type ConnectionProvider, type DynamicConnectionSpec } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, noopLogger } from "@assemblyline-agents/runtime";
import { ConnectionRegistry } from "../src/connections/connection-registry.js";
import { ToolTable } from "../src/run/tool-table.js";

const ALLOWED = ["crm.example.com"];
const spec = (name: string, path = "/ping"): DynamicConnectionSpec => ({ name, kind: "http", baseUrl: "https://crm.example.com", endpoints: { ping: { method: "GET", path, description: "Ping" } } });

/** A provider that records each release it is asked for; `fail` makes release reject (or throw at once). */
function recordingProvider(fail?: "reject" | "throw") {
  const released: Array<{ name: string; definition: unknown; policy: unknown }> = [];
  const provider: ConnectionProvider = {
    describe: async () => ({}),
    tools: (name) => ({ [`${name}__ping`]: defineTool({ description: "Ping.", inputSchema: { type: "object" }, execute: async () => ({}) }) }),
    release: (name, definition, policy) => {
      released.push({ name, definition, policy });
      if (fail === "throw") throw new Error("the client would not close");
      return fail === "reject" ? Promise.reject(new Error("the server hung up")) : Promise.resolve();
    },
  };
  return { provider, released };
}

/** Registries on one settings store, as replicas have. */
function replica(settings: InMemoryStateAdapter, provider: ConnectionProvider, runId: string, warnings: Array<Record<string, unknown>> = []) {
  const table = new ToolTable();
  const registry = new ConnectionRegistry({ provider, folder: {}, table, settings, agentId: "agent", dynamic: { dynamic: true, approval: false, allowedHosts: ALLOWED }, logger: { ...noopLogger(), warn: (fields) => void warnings.push(fields) } });
  return { registry, table, manager: registry.manager({ approved: false, require: () => undefined }, runId) };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("a withdrawn run-added connection", () => {
  it("is released with the definition and policy its tools were made with when a run removes it", async () => {
    const { provider, released } = recordingProvider();
    const { manager, table } = replica(new InMemoryStateAdapter(), provider, "run_a");
    await manager.add(spec("crm"));
    expect(released).toEqual([]);
    expect(await manager.remove("crm")).toEqual({ removed: true });
    await settle();
    expect(released).toEqual([{ name: "crm", definition: spec("crm"), policy: { allowedHosts: ALLOWED, onlyAllowedHosts: true } }]);
    expect(table.has("crm__ping")).toBe(false);
  });

  it("is released by another replica when its refresh finds the connection gone", async () => {
    const settings = new InMemoryStateAdapter();
    const a = replica(settings, recordingProvider().provider, "run_a");
    const b = recordingProvider();
    const other = replica(settings, b.provider, "run_b");
    await a.manager.add(spec("crm"));
    await other.registry.refresh();
    await a.manager.remove("crm");
    expect(b.released).toEqual([]);
    await other.registry.refresh();
    await settle();
    expect(b.released).toMatchObject([{ name: "crm", definition: spec("crm") }]);
  });

  it("is released, old definition and all, when a replica's refresh finds it replaced by a new one", async () => {
    const settings = new InMemoryStateAdapter();
    const a = replica(settings, recordingProvider().provider, "run_a");
    const b = recordingProvider();
    const other = replica(settings, b.provider, "run_b");
    await a.manager.add(spec("crm"));
    await other.registry.refresh();
    await a.manager.remove("crm");
    await a.manager.add(spec("crm", "/v2/ping"));
    await other.registry.refresh();
    await settle();
    expect(b.released).toMatchObject([{ name: "crm", definition: spec("crm") }]);
    expect(other.table.has("crm__ping")).toBe(true);
  });

  for (const fail of ["reject", "throw"] as const) {
    it(`is removed all the same when the provider's release ${fail === "reject" ? "rejects" : "throws"}: a warning is logged, the run is not failed`, async () => {
      const warnings: Array<Record<string, unknown>> = [];
      const { manager } = replica(new InMemoryStateAdapter(), recordingProvider(fail).provider, "run_a", warnings);
      await manager.add(spec("crm"));
      expect(await manager.remove("crm")).toEqual({ removed: true });
      await settle();
      expect(warnings).toMatchObject([{ event: "connection.release_failed", connection: "crm", err: expect.stringMatching(/server hung up|would not close/) }]);
    });
  }

  it("does not hold the run that removed it while the provider's release is under way", async () => {
    const { provider } = recordingProvider();
    provider.release = () => new Promise<void>(() => undefined);
    const { manager } = replica(new InMemoryStateAdapter(), provider, "run_a");
    await manager.add(spec("crm"));
    const answer = await Promise.race([manager.remove("crm"), new Promise((resolve) => setTimeout(() => resolve("still waiting"), 1_000))]);
    expect(answer).toEqual({ removed: true });
  });

  it("needs no release from a provider that has none", async () => {
    const { provider } = recordingProvider();
    delete provider.release;
    const { manager } = replica(new InMemoryStateAdapter(), provider, "run_a");
    await manager.add(spec("crm"));
    expect(await manager.remove("crm")).toEqual({ removed: true });
  });
});
