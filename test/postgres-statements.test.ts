import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresStateAdapter } from "@assemblyline-agents/postgres";
import { OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { agentFolder } from "../kernel/test/support/agent-folder.js";
import { TEST_DATABASE_URL, probeDatabase } from "../plugins/postgres/test/support/database.js";

const DATABASE_URL = TEST_DATABASE_URL;
const database = await probeDatabase("postgres-statements");
const schema = `al_statements_${process.pid}_${Date.now().toString(36)}`;

describe.skipIf(!database.available)("statements per turn on PostgreSQL", () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL });
  const sent: string[] = [];
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    sent.push(String(typeof args[0] === "string" ? args[0] : (args[0] as { text: string }).text).trim().split(/\s+/).slice(0, 3).join(" "));
    return query(...args);
  };
  let state: PostgresStateAdapter | undefined;
  afterAll(async () => {
    // The adapter holds a liveness session of its own: end it before dropping what it uses.
    await state?.close();
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  it("keeps a turn of 3 model calls and 2 tool calls (one with a durable step and a conversation) in at most 15 statements", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "count", model: "test/m", defaultTools: ["lookup", "save"] });\n`,
      "tools/lookup.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "d", inputSchema: { type: "object" },
  async execute(_input, ctx) { return ctx.step("scan", async () => ({ found: 1 })); } });`,
      "tools/save.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "d", inputSchema: { type: "object" },
  async execute(_input, ctx) { await ctx.emit("saved.it", { key: ctx.idempotencyKey("save") }); return { saved: true }; } });`,
    });
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    state = new PostgresStateAdapter({ pool, schema });
    await state.migrate();
    const harness = scriptedHarness({ turns: [{ toolCalls: [{ name: "lookup", input: {} }] }, { toolCalls: [{ name: "save", input: {} }] }, { text: "done" }] });
    const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: harness, logger: noopLogger() });
    await runtime.run({ message: "warm up" });

    sent.length = 0;
    const result = await runtime.run({ message: "count me", conversationId: "c-count" });
    expect(result.status).toBe("completed");
    const events = await state.listEvents(result.runId);
    const statements = sent.length - 1;
    // One statement per durable boundary (the run's start and each model result ride on the next append,
    // the observers' position on the next append or the release), plus the reads a turn needs.
    expect(statements, sent.join("\n")).toBeLessThanOrEqual(15);
    expect(sent.filter((text) => text.startsWith("SELECT first_seq")).length, "one append per recorded batch").toBeLessThanOrEqual(events.length);
  }, 60_000);

  it("runs 3 model calls and 2 plain tool calls in 9 statements: 7 writes, one per durable boundary, and the context's 2 listings (memory, files)", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "plain", model: "test/m", defaultTools: ["echo"] });\n`,
      "tools/echo.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "d", inputSchema: { type: "object" }, async execute(input) { return { echoed: input }; } });`,
    });
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    state ??= new PostgresStateAdapter({ pool, schema });
    await state.migrate();
    const harness = scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { a: 1 } }] }, { toolCalls: [{ name: "echo", input: { b: 2 } }] }, { text: "done" }] });
    const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: harness, logger: noopLogger() });
    await runtime.run({ message: "warm up" });

    sent.length = 0;
    const result = await runtime.run({ message: "count me" });
    expect(result.status).toBe("completed");
    const writes = sent.filter((text) => !text.startsWith("SELECT path") && !text.startsWith("SELECT key"));
    // createRun (leased), 5 appends (start + model result + tool.called, tool.completed, ..., model result + run.completed), the release.
    expect(sent.length, sent.join("\n")).toBe(9);
    expect(writes, sent.join("\n")).toHaveLength(7);
    const run = await state.getRun(result.runId);
    expect(run).toMatchObject({ status: "completed", lease: null, observedSeq: run!.lastSeq });
  }, 60_000);
});
