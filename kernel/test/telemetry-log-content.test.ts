import { describe, expect, it } from "vitest";
import type { RuntimeLogger, TelemetrySpan } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, scriptedHarness } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const CARD = "4111111111111111";
const KEY = "sk-live-USERSECRET123456";

/** The "run failed" log line of a run whose tool throws an error quoting its input, under `captureContent` (none: no instrumentation.ts). */
async function runFailedLine(captureContent: "usage" | "content" | "off" | undefined): Promise<Record<string, unknown>> {
  return failedRunLog(captureContent === undefined ? undefined : JSON.stringify(captureContent)).then(({ line }) => line);
}

/**
 * Such a run under instrumentation.ts's captureContent `expression`, the agent built with
 * `atBuild` as its environment and loaded with `atLoad`; its "run failed" line and its spans.
 */
async function failedRunLog(expression: string | undefined, env: { atBuild?: Record<string, string>; atLoad?: Record<string, string> } = {}) {
  const dir = agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/charge.ts": toolSource({ upFront: true, schema: "{ type: 'object' }", execute: "throw new Error('card declined for ' + input.card + ' with Bearer ' + input.key);" }),
    ...(expression === undefined
      ? {}
      : {
          "instrumentation.ts": `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({ captureContent: ${expression}, setup: () => ({ export() {} }) });
`,
        }),
  });
  const { artifactRoot } = await withEnv(env.atBuild ?? {}, () => buildAgent(dir));
  const lines: Array<Record<string, unknown>> = [];
  const keep = (fields: Record<string, unknown>, msg: string) => void lines.push({ ...fields, msg });
  const logger: RuntimeLogger = { debug: keep, info: keep, warn: keep, error: keep };
  const spans: TelemetrySpan[] = [];
  const turns = [{ toolCalls: [{ name: "charge", input: { card: CARD, key: KEY }, id: "call_charge" }] }, { text: "Charged." }];
  const bundle = await withEnv(env.atLoad ?? {}, () => loadRuntimeBundle(artifactRoot));
  const runtime = new OpenEveRuntime({ ...bundle, state: new InMemoryStateAdapter(), agentHarness: scriptedHarness({ turns }), logger, telemetry: { export: (span) => void spans.push(span) } });
  const result = await runtime.run({ message: "charge it" });
  await runtime.close();
  expect(result.status).toBe("failed");
  return { line: lines.find((line) => line.msg === "run failed")!, spans };
}

/** `work` with `vars` set in process.env (instrumentation.ts reads its mode from there when it is evaluated). */
async function withEnv<T>(vars: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  Object.assign(process.env, vars);
  try {
    return await work();
  } finally {
    for (const [name, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
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

  it("follows the mode instrumentation.ts gives where the agent runs, as the spans do, not the one it gave at build", async () => {
    const expression = 'process.env.AL_CAPTURE_STAGE === "production" ? "usage" : "full"';
    // Built on a developer's machine, run in production: the card number stays out of the log line as out of the spans.
    const production = await failedRunLog(expression, { atLoad: { AL_CAPTURE_STAGE: "production" } });
    expect(production.spans.find((span) => span.name === "execute_tool charge")!.status.message).not.toContain(CARD);
    expect(production.line).toMatchObject({ event: "run.failed", code: "AL_ERR_TOOL_FAILED" });
    expect(production.line).not.toHaveProperty("err");
    expect(JSON.stringify(production.line)).not.toContain(CARD);
    // The reverse: built in production, run where the text is asked for.
    const development = await failedRunLog(expression, { atBuild: { AL_CAPTURE_STAGE: "production" } });
    expect(development.spans.find((span) => span.name === "execute_tool charge")!.status.message).toContain(CARD);
    expect(development.line).toMatchObject({ event: "run.failed", err: expect.stringContaining(`card declined for ${CARD}`) });
  });
});
