import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { defineHttpConnection, defineTool, type ConnectionProvider, type JsonValue } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, noopLogger } from "@assemblyline-agents/runtime";
import { ConnectionRegistry, DESCRIBE_WAIT_MS, RETRY_FIRST_MS } from "../src/connections/connection-registry.js";
import { ToolTable } from "../src/run/tool-table.js";

/** A host connection "crm" whose describe answers as `answer` says, counting its calls. */
function registry(answer: () => Promise<JsonValue>) {
  let calls = 0;
  const provider: ConnectionProvider = {
    connections: { crm: defineHttpConnection({ description: "The CRM.", baseUrl: "https://crm.example.com", endpoints: {} }) },
    describe: () => {
      calls += 1;
      return answer();
    },
    tools: () => ({ crm__ping: defineTool({ description: "Ping.", inputSchema: { type: "object" }, execute: async () => ({}) }) }),
  };
  const table = new ToolTable();
  const connections = new ConnectionRegistry({
    provider,
    folder: {},
    table,
    settings: new InMemoryStateAdapter(),
    agentId: "agent",
    dynamic: { dynamic: false, approval: true, allowedHosts: [] },
    logger: noopLogger(),
  });
  return { connections, table, calls: () => calls };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("a host connection that cannot be described", () => {
  it("is tried again after a backoff that doubles, not at every turn", async () => {
    let up = false;
    const { connections, table, calls } = registry(async () => {
      if (!up) throw new Error("connect ECONNREFUSED");
      return {};
    });
    await connections.refresh();
    expect(calls()).toBe(1);
    // Turns in the next second do not ask again.
    await connections.refresh();
    await vi.advanceTimersByTimeAsync(RETRY_FIRST_MS - 10);
    await connections.refresh();
    expect(calls()).toBe(1);
    await vi.advanceTimersByTimeAsync(20);
    await connections.refresh();
    expect(calls()).toBe(2);
    // Failed twice: two seconds now.
    await vi.advanceTimersByTimeAsync(2 * RETRY_FIRST_MS - 10);
    await connections.refresh();
    expect(calls()).toBe(2);
    up = true;
    await vi.advanceTimersByTimeAsync(20);
    await connections.refresh();
    expect(calls()).toBe(3);
    expect(table.has("crm__ping")).toBe(true);
    expect(connections.connections()).toHaveProperty("crm");
  });

  it("holds a turn no longer than its wait when it never answers, and turns meanwhile share the one describe", async () => {
    let answer: ((record: JsonValue) => void) | undefined;
    const { connections, table, calls } = registry(() => new Promise((resolve) => (answer = resolve)));
    let settled = 0;
    const turns = [connections.refresh(), connections.refresh(), connections.refresh()].map((turn) => turn.then(() => (settled += 1)));
    await vi.advanceTimersByTimeAsync(DESCRIBE_WAIT_MS.first - 10);
    expect(settled).toBe(0);
    await vi.advanceTimersByTimeAsync(20);
    await Promise.all(turns);
    expect(settled).toBe(3);
    expect(calls()).toBe(1);
    expect(table.has("crm__ping")).toBe(false);
    // The describe answers late: the next turn has the tools without asking again.
    answer!({});
    await connections.refresh();
    expect(calls()).toBe(1);
    expect(table.has("crm__ping")).toBe(true);
  });
});
