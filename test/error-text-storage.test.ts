import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { storableText } from "@assemblyline-agents/core";
import { PostgresStateAdapter } from "@assemblyline-agents/postgres";
import { OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { agentFolder } from "../kernel/test/support/agent-folder.js";
import { TEST_DATABASE_URL, probeDatabase } from "../plugins/postgres/test/support/database.js";

const database = await probeDatabase("error-text-storage");
const schema = `al_error_text_${process.pid}_${Date.now().toString(36)}`;

describe("storableText", () => {
  it("replaces lone surrogates and NUL with U+FFFD, and keeps whole pairs and other text", () => {
    expect(storableText("cut \ud83d| and \udc4d| and \u0000|")).toBe("cut \ufffd| and \ufffd| and \ufffd|");
    expect(storableText("whole 👍 pair, tab\t, é")).toBe("whole 👍 pair, tab\t, é");
  });
});

describe.skipIf(!database.available)("an error message PostgreSQL could not store as it is", () => {
  const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL });
  let state: PostgresStateAdapter | undefined;
  afterAll(async () => {
    await state?.close();
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  it("fails the run as the tool's failure, the message recorded with U+FFFD, not as a refused write", async () => {
    // A message cut inside an emoji, with a NUL from binary output.
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "texts", model: "test/m" });\n`,
      "tools/convert.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "d", inputSchema: { type: "object" }, defaultEnabled: true,
  async execute() { throw new Error("converter said: " + "👍".slice(0, 1) + " at byte \\u0000"); } });`,
    });
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    state = new PostgresStateAdapter({ pool, schema });
    await state.migrate();
    const runtime = new OpenEveRuntime({ ...bundle, state, logger: noopLogger(), agentHarness: scriptedHarness({ turns: [{ toolCalls: [{ name: "convert", input: {} }] }, { text: "never" }] }) });
    const run = await runtime.run({ message: "convert" });
    expect(run.status).toBe("failed");
    expect(run.error).toMatchObject({ code: "AL_ERR_TOOL_FAILED" });
    const [call] = await state.listToolCalls(run.runId);
    expect(call).toMatchObject({ status: "failed", error: "converter said: \ufffd at byte \ufffd" });
  });
});
