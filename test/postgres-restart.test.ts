import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresState, type PostgresStateAdapter } from "@assemblyline-agents/postgres";
import { OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness, type RunResult } from "@assemblyline-agents/runtime";
import { agentFolder } from "../kernel/test/support/agent-folder.js";
import { postgresBinDir, startPrivatePostgres, type PrivatePostgres } from "./support/private-postgres.js";

const canRun = process.getuid?.() === 0 && postgresBinDir() !== undefined;
if (!canRun) {
  const reason = "needs root and the PostgreSQL server binaries to run a private cluster";
  if (process.env.CI) throw new Error(`postgres-restart: ${reason}`);
  console.log(`skipping postgres-restart: ${reason}`);
}

describe.skipIf(!canRun)("PostgreSQL restarted during a run", () => {
  let server: PrivatePostgres;
  beforeAll(async () => {
    server = await startPrivatePostgres();
  }, 120_000);
  afterAll(() => server?.stop());

  it("loses nothing: the run completes (directly or by recovery) with a contiguous log and one side effect", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "restart-agent", model: "test/m", defaultTools: ["slow_write"] });\n`,
      "tools/slow_write.ts": `import { appendFileSync, existsSync } from "node:fs";
import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Writes once the database has been restarted.",
  inputSchema: { type: "object", properties: { go: { type: "string" }, log: { type: "string" } }, required: ["go", "log"] },
  async execute(input, ctx) {
    appendFileSync(input.log + ".started", "x\\n");
    while (!existsSync(input.go)) await new Promise((resolve) => setTimeout(resolve, 20));
    appendFileSync(input.log, ctx.idempotencyKey("write") + "\\n");
    return { written: true };
  },
});
`,
    });
    const go = join(dir, "go");
    const log = join(dir, "writes.log");
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    const harness = scriptedHarness({ turns: [{ toolCalls: [{ name: "slow_write", input: { go, log } }] }, { text: "done" }] });
    const state: PostgresStateAdapter = await createPostgresState({ connectionString: server.url, schema: "restart_test" });
    const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: harness, logger: noopLogger(), leaseTtlMs: 500 });
    try {
      const running = runtime.run({ message: "write" }).then(
        (result) => ({ result }),
        (error: Error & { code?: string }) => ({ error }),
      );
      while (!existsSync(log + ".started")) await new Promise((resolve) => setTimeout(resolve, 20));
      server.restart();
      writeFileSync(go, "now");
      const first = await running;
      let result: RunResult | undefined = "result" in first ? first.result : undefined;
      if ("error" in first) {
        // The state store went away under the run: it is left running, not failed.
        expect(first.error.code).toBe("AL_ERR_STATE_UNAVAILABLE");
        const deadline = Date.now() + 20_000;
        while (!result && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          result = (await runtime.recoverRuns({ limit: 1 }).catch(() => []))[0];
        }
      }
      expect(result?.status).toBe("completed");
      const events = await state.listEvents(result!.runId);
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
      expect(events.filter((event) => event.type === "tool.completed")).toHaveLength(1);
      expect(events.at(-1)!.type).toBe("run.completed");
      expect(new Set(readFileSync(log, "utf8").trim().split("\n")).size).toBe(1);
    } finally {
      await runtime.close();
    }
  }, 120_000);
});
