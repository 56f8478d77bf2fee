import { describe, expect, it } from "vitest";
import type { RuntimeLogger } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, scriptedHarness } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const CARD = "4111111111111111";
const KEY = "sk-live-USERSECRET123456";

/** The "run failed" log line of a run whose tool throws an error quoting its input, under `captureContent` (none: no instrumentation.ts). */
async function runFailedLine(captureContent: "usage" | "content" | "off" | undefined): Promise<Record<string, unknown>> {
  const dir = agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/charge.ts": toolSource({ upFront: true, schema: "{ type: 'object' }", execute: "throw new Error('card declined for ' + input.card + ' with Bearer ' + input.key);" }),
    ...(captureContent === undefined
      ? {}
      : {
          "instrumentation.ts": `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({ captureContent: ${JSON.stringify(captureContent)}, setup: () => ({ export() {} }) });
`,
        }),
  });
  const { artifactRoot } = await buildAgent(dir);
  const lines: Array<Record<string, unknown>> = [];
  const keep = (fields: Record<string, unknown>, msg: string) => void lines.push({ ...fields, msg });
  const logger: RuntimeLogger = { debug: keep, info: keep, warn: keep, error: keep };
  const turns = [{ toolCalls: [{ name: "charge", input: { card: CARD, key: KEY }, id: "call_charge" }] }, { text: "Charged." }];
  const runtime = new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state: new InMemoryStateAdapter(), agentHarness: scriptedHarness({ turns }), logger });
  const result = await runtime.run({ message: "charge it" });
  await runtime.close();
  expect(result.status).toBe("failed");
  return lines.find((line) => line.msg === "run failed")!;
}

describe("the run failed log line under captureContent", () => {
  it("names the failure by code and run, without the error's text, under usage, off and without instrumentation.ts", async () => {
    for (const mode of ["usage", "off", undefined] as const) {
      const line = await runFailedLine(mode);
      expect(line).toMatchObject({ event: "run.failed", code: "AL_ERR_TOOL_FAILED", runId: expect.stringMatching(/^run_/) });
      expect(line).not.toHaveProperty("err");
      expect(JSON.stringify(line)).not.toContain(CARD);
    }
  });

  it("carries the error's text under content, with secret-looking values redacted as span bodies are", async () => {
    const line = await runFailedLine("content");
    expect(line).toMatchObject({ event: "run.failed", code: "AL_ERR_TOOL_FAILED", err: expect.stringContaining(`card declined for ${CARD}`) });
    expect(JSON.stringify(line)).not.toContain(KEY);
  });
});
