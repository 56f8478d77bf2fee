import { describe, expect, it } from "vitest";
import { AssemblyLineError, defineHttpConnection, defineTool, type ConnectionProvider, type DynamicConnectionSpec, type JsonValue } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, noopLogger } from "@assemblyline-agents/runtime";
import { ConnectionRegistry } from "../src/connections/connection-registry.js";
import { ToolTable } from "../src/run/tool-table.js";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { CrashOnceBefore } from "./support/crash-once-state.js";
import { startAgent } from "./support/runtime.js";

/** A provider whose every tool records the idempotency key it would send with its request. */
function keyRecordingProvider(sent: string[], connections?: ConnectionProvider["connections"]): ConnectionProvider {
  return {
    ...(connections ? { connections } : {}),
    describe: async () => ({}),
    tools: (name) => ({
      [`${name}__ping`]: defineTool({
        description: "Ping.",
        inputSchema: { type: "object" },
        defaultEnabled: true,
        execute: async (_input, ctx) => {
          sent.push(ctx.idempotencyKey(`${name}__ping`));
          return { pong: true };
        },
      }),
    }),
  };
}

const MINIMAL = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model" });\n`;
const crm = { crm: defineHttpConnection({ description: "The CRM.", baseUrl: "https://crm.example.com", endpoints: { ping: { method: "GET", path: "/ping", description: "Ping" } } }) };

/** One run calling crm__ping, whose first attempt dies right before an event of `crashBefore`, then resumed as recovery resumes it. */
async function pingAcrossACrash(crashBefore: string) {
  const sent: string[] = [];
  const state = new CrashOnceBefore(crashBefore);
  const { runtime, log, types } = await startAgent(agentFolder({ "agent.ts": MINIMAL }), [{ toolCalls: [{ name: "crm__ping", input: {} }] }, { text: "done" }], { state, connections: keyRecordingProvider(sent, crm) });
  const first = await runtime.run({ message: "go" }).then(
    () => undefined,
    (error: unknown) => error,
  );
  const [run] = (await state.listRuns()).runs;
  const resumed = await runtime.resume(run!.id);
  return { first, resumed, sent, outcomes: log.outcomes.map((entry) => entry.outcome), types: await types(run!.id) };
}

describe("a connection's tool call across a crash", () => {
  it("is not sent again once it completed: the resumed run is given the recorded answer", async () => {
    const { first, resumed, sent, types } = await pingAcrossACrash("run.completed");
    expect(first).toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    expect(resumed.status).toBe("completed");
    expect(sent).toHaveLength(1);
    expect(types.filter((type) => type === "tool.completed")).toHaveLength(1);
  });

  it("is sent again, with the same idempotency key, when the crash came before its answer was recorded", async () => {
    const { resumed, sent, outcomes } = await pingAcrossACrash("tool.completed");
    expect(resumed.status).toBe("completed");
    expect(sent).toHaveLength(2);
    expect(sent[1]).toBe(sent[0]);
    expect(outcomes.at(-1)).toMatchObject({ status: "completed", output: { pong: true } });
  });
});

describe("ctx.connectionManager.add across a crash", () => {
  it("answers the connection it added when its tool call runs again after the store write, instead of refusing the name", async () => {
    const sent: string[] = [];
    const state = new CrashOnceBefore("tool.completed");
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", dynamicConnections: { dynamic: true, approval: false, allowedHosts: ["crm.example.com"] } });\n`,
      "tools/connect.ts": toolSource({ upFront: true, schema: `{ type: "object", properties: { spec: { type: "object" } }, required: ["spec"] }`, execute: "return await ctx.connectionManager.add(input.spec);" }),
    });
    const spec = { name: "crm", kind: "http", baseUrl: "https://crm.example.com", endpoints: { ping: { method: "GET", path: "/ping", description: "Ping" } } };
    const { runtime, log } = await startAgent(dir, [{ toolCalls: [{ name: "connect", input: { spec } }] }, { text: "done" }], { state, connections: keyRecordingProvider(sent) });
    await expect(runtime.run({ message: "connect" })).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    const [run] = (await state.listRuns()).runs;
    const resumed = await runtime.resume(run!.id);
    expect(resumed.status).toBe("completed");
    expect(log.outcomes.at(-1)!.outcome).toMatchObject({ status: "completed", output: { name: "crm", source: "dynamic", tools: ["crm__ping"] } });
    expect(Object.keys((await state.getSetting(`connections:${runtime.manifest.agent.id}`)) as object)).toEqual(["crm"]);
  });
});

describe("ctx.connectionManager.remove across a crash", () => {
  it("answers removed: true when its tool call runs again after the store write, as the first attempt did", async () => {
    /** Dies right before the second tool.completed: the removal is written, its answer is not. */
    class CrashBeforeSecondAnswer extends InMemoryStateAdapter {
      answers = 0;
      override async appendEvents(...args: Parameters<InMemoryStateAdapter["appendEvents"]>) {
        if (args[1].some((event) => event.type === "tool.completed") && (this.answers += 1) === 2) throw new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", "the state store went away");
        return super.appendEvents(...args);
      }
    }
    const state = new CrashBeforeSecondAnswer();
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", dynamicConnections: { dynamic: true, approval: false, allowedHosts: ["crm.example.com"] } });\n`,
      "tools/connect.ts": toolSource({ upFront: true, schema: `{ type: "object" }`, execute: `return await ctx.connectionManager.add(${JSON.stringify(spec("crm"))});` }),
      "tools/disconnect.ts": toolSource({ upFront: true, schema: `{ type: "object" }`, execute: `return await ctx.connectionManager.remove("crm");` }),
    });
    const { runtime, log } = await startAgent(dir, [{ toolCalls: [{ name: "connect", input: {} }] }, { toolCalls: [{ name: "disconnect", input: {} }] }, { text: "done" }], { state, connections: keyRecordingProvider([]) });
    await expect(runtime.run({ message: "go" })).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    const [run] = (await state.listRuns()).runs;
    expect(await state.getSetting(`connections:${runtime.manifest.agent.id}`)).toEqual({});
    expect((await runtime.resume(run!.id)).status).toBe("completed");
    expect(log.outcomes.at(-1)!.outcome).toMatchObject({ status: "completed", output: { removed: true } });
  });
});

/** Settings whose reads answer late, as a replica's read does while another replica writes: each read returns what was stored when it began. */
class LateReads extends InMemoryStateAdapter {
  override async getSetting(key: string): Promise<JsonValue | undefined> {
    const value = await super.getSetting(key);
    await new Promise((resolve) => setTimeout(resolve, 10));
    return value;
  }
}

/** Two replicas' registries on one settings store. */
function replicas(settings: InMemoryStateAdapter) {
  const provider: ConnectionProvider = {
    describe: async () => ({}),
    tools: (name) => ({ [`${name}__ping`]: defineTool({ description: "Ping.", inputSchema: { type: "object" }, execute: async () => ({}) }) }),
  };
  const gate = { approved: false, require: () => undefined };
  return ["run_a", "run_b"].map((runId) =>
    new ConnectionRegistry({ provider, folder: {}, table: new ToolTable(), settings, agentId: "agent", dynamic: { dynamic: true, approval: false, allowedHosts: ["crm.example.com"] }, logger: noopLogger() }).manager(gate, runId),
  ) as [ReturnType<ConnectionRegistry["manager"]>, ReturnType<ConnectionRegistry["manager"]>];
}

const spec = (name: string, path = "/ping"): DynamicConnectionSpec => ({ name, kind: "http", baseUrl: "https://crm.example.com", endpoints: { ping: { method: "GET", path, description: "Ping" } } });

describe("run-added connections changed on two replicas at once", () => {
  it("keeps both connections when each replica adds one", async () => {
    const settings = new LateReads();
    const [a, b] = replicas(settings);
    await Promise.all([a.add(spec("alpha")), b.add(spec("beta"))]);
    expect(Object.keys((await settings.getSetting("connections:agent")) as object).sort()).toEqual(["alpha", "beta"]);
  });

  it("keeps the other replica's add when one removes another connection meanwhile", async () => {
    const settings = new LateReads();
    const [a, b] = replicas(settings);
    await a.add(spec("alpha"));
    await Promise.all([a.remove("alpha"), b.add(spec("beta"))]);
    expect(Object.keys((await settings.getSetting("connections:agent")) as object)).toEqual(["beta"]);
  });

  it("refuses the second of two adds of one name, keeping the first", async () => {
    const settings = new LateReads();
    const [a, b] = replicas(settings);
    const results = await Promise.allSettled([a.add(spec("crm", "/first")), b.add(spec("crm", "/second"))]);
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected"]);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: "AL_ERR_CONNECTION_REFUSED", message: expect.stringContaining('"crm" already exists') });
    const stored = (await settings.getSetting("connections:agent")) as unknown as Record<string, { addedBy: string; spec: DynamicConnectionSpec }>;
    expect(stored.crm).toMatchObject({ addedBy: "run_a", spec: spec("crm", "/first") });
  });
});
