import { afterEach, describe, expect, it } from "vitest";
import type { AgentHarness, TelemetrySpan } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness, type ScriptedTurn } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { probeHarness, type ProbeResponse } from "./support/probe-harness.js";

const SECRET = "sk-live-4f9d2c81e7b3a";
const sinks = globalThis as unknown as { __spans?: Record<string, TelemetrySpan[]> };
afterEach(() => void delete sinks.__spans);

/** instrumentation.ts whose sink collects spans under a key the test reads. */
function instrumentation(key: string, captureContent: string): string {
  return `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({
  serviceName: "telemetry-test",
  captureContent: ${JSON.stringify(captureContent)},
  setup: () => ({ export(span) { ((globalThis.__spans ??= {})[${JSON.stringify(key)}] ??= []).push(span); } }),
});
`;
}

/** Adds the usage a real engine reports to each model.response the scripted engine records. */
function withUsage(inner: AgentHarness): AgentHarness {
  return {
    name: inner.name,
    runTurn: (input, ctx) =>
      inner.runTurn(input, {
        ...ctx,
        emit: (type, data) =>
          ctx.emit(type, type === "model.response" ? { ...data, provider: "openai", model: "gpt-test", stopReason: "stop", usage: { inputTokens: 120, outputTokens: 30, costUsd: 0.002 } } : data),
      }),
  };
}

const loginInput = {
  user: "ada",
  password: SECRET,
  headers: { Authorization: `Bearer ${SECRET}` },
  note: JSON.stringify({ api_key: SECRET, region: "eu" }),
  essay: "x".repeat(100_000),
};

/**
 * The probe engine restarts its loop on every turn and leans on the journal to
 * replay; this wrapper records model.response inside each step, as real engines do.
 */
function replayingEngine(responses: ProbeResponse[]): AgentHarness {
  const inner = probeHarness(responses);
  return {
    name: inner.name,
    runTurn: (input, ctx) =>
      inner.runTurn(input, {
        ...ctx,
        step: (key, fn, options) =>
          ctx.step(
            key,
            async () => {
              const result = await fn();
              await ctx.emit("model.response", { harness: "probe", text: "", usage: { inputTokens: 10, outputTokens: 2 } });
              return result;
            },
            options,
          ),
      }),
  };
}

async function runWith(mode: string, turns: ScriptedTurn[], extraFiles: Record<string, string> = {}, engine?: () => AgentHarness) {
  const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/login.ts": toolSource({ upFront: true, schema: "{ type: 'object' }", execute: "return { ok: true, token: input.password ?? null };" }), "instrumentation.ts": instrumentation(mode, mode), ...extraFiles });
  const { artifactRoot } = await buildAgent(dir);
  const state = new InMemoryStateAdapter();
  const start = async () => new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state, agentHarness: engine?.() ?? withUsage(scriptedHarness({ turns })), logger: noopLogger() });
  return { start, spans: () => sinks.__spans?.[mode] ?? [] };
}

const loginTurns: ScriptedTurn[] = [{ toolCalls: [{ name: "login", input: loginInput, id: "call_login" }] }, { text: "Logged in." }];

describe("instrumentation.ts spans and captureContent", () => {
  it("times each chat span over its model call, also the first, whose response commits with the run's start", async () => {
    // Each model call takes 40 ms.
    const slow = (): AgentHarness => {
      const inner = withUsage(scriptedHarness({ turns: loginTurns }));
      return {
        name: inner.name,
        runTurn: (input, ctx) =>
          inner.runTurn(input, { ...ctx, modelCall: (key, fn, options) => ctx.modelCall(key, async () => (await new Promise((resolve) => setTimeout(resolve, 40)), fn()), options) }),
      };
    };
    const { start, spans } = await runWith("usage", loginTurns, {}, slow);
    const runtime = await start();
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    await runtime.close();
    const chats = spans().filter((span) => span.attributes["gen_ai.operation.name"] === "chat");
    const steps = spans().filter((span) => span.name.startsWith("step harness:model:"));
    expect(chats).toHaveLength(2);
    for (const [index, chat] of chats.entries()) {
      expect(chat.endTimeMs - chat.startTimeMs).toBeGreaterThanOrEqual(35);
      expect(chat.startTimeMs).toBe(steps[index]!.startTimeMs);
    }
  });

  it("off: the sink sees nothing", async () => {
    const { start, spans } = await runWith("off", loginTurns);
    const runtime = await start();
    expect((await runtime.run({ message: `my password is ${SECRET}` })).status).toBe("completed");
    await runtime.close();
    expect(spans()).toEqual([]);
  });

  it("usage: one trace per run with invoke_agent over chat, execute_tool and step spans, GenAI names, no bodies", async () => {
    const { start, spans } = await runWith("usage", loginTurns);
    const runtime = await start();
    const result = await runtime.run({ message: `my password is ${SECRET}`, conversationId: "conv-1" });
    await runtime.close();
    const seen = spans();
    const root = seen.find((span) => span.attributes["gen_ai.operation.name"] === "invoke_agent")!;
    expect(root).toBeDefined();
    expect(root.parentSpanId).toBeUndefined();
    expect(root.name).toBe(`invoke_agent ${runtime.manifest.agent.name}`);
    expect(root.attributes).toMatchObject({
      "assembly_line.run.id": result.runId,
      "assembly_line.agent.revision": runtime.manifest.agentRevision,
      "gen_ai.conversation.id": "conv-1",
      "gen_ai.usage.input_tokens": 240,
      "gen_ai.usage.output_tokens": 60,
      "assembly_line.run.status": "completed",
    });
    expect(root.resource["service.name"]).toBe("telemetry-test");
    const children = seen.filter((span) => span !== root);
    for (const span of children) {
      expect(span.traceId).toBe(root.traceId);
      expect(span.parentSpanId).toBe(root.spanId);
      expect(span.startTimeMs).toBeGreaterThanOrEqual(root.startTimeMs);
      expect(span.endTimeMs).toBeLessThanOrEqual(root.endTimeMs);
    }
    expect(children.map((span) => span.name).sort()).toEqual(["chat model", "chat model", "execute_tool login", "step harness:model:0", "step harness:model:1"]);
    const chat = children.find((span) => span.attributes["gen_ai.operation.name"] === "chat")!;
    expect(chat.kind).toBe("client");
    expect(chat.attributes).toMatchObject({
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "model",
      "gen_ai.response.model": "gpt-test",
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.input_tokens": 120,
      "gen_ai.usage.output_tokens": 30,
      "assembly_line.usage.cost_usd": 0.002,
    });
    const tool = children.find((span) => span.attributes["gen_ai.operation.name"] === "execute_tool")!;
    expect(tool.attributes).toMatchObject({ "gen_ai.tool.name": "login", "gen_ai.tool.call.id": "call_login", "assembly_line.tool.outcome": "completed" });
    const everything = JSON.stringify(seen);
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain("my password");
    expect(everything).not.toContain("Logged in.");
    for (const key of ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"]) {
      expect(everything).not.toContain(key);
    }
  });

  for (const [mode, limit] of [["content", 4_096], ["full", 65_536]] as const) {
    it(`${mode}: bodies reach the sink with secret-looking keys redacted (nested JSON too) and cut at ${limit} characters`, async () => {
      const { start, spans } = await runWith(mode, loginTurns);
      const runtime = await start();
      await runtime.run({ message: `hello ${"y".repeat(10)}` });
      await runtime.close();
      const seen = spans();
      const tool = seen.find((span) => span.attributes["gen_ai.operation.name"] === "execute_tool")!;
      const args = String(tool.attributes["gen_ai.tool.call.arguments"]);
      expect(args).toContain('"user":"ada"');
      expect(args).toContain('"password":"[REDACTED]"');
      expect(args).toContain('"Authorization":"[REDACTED]"');
      expect(args).toContain('\\"api_key\\":\\"[REDACTED]\\"');
      expect(args).toContain('\\"region\\":\\"eu\\"');
      expect(args.length).toBeLessThan(limit + 40);
      expect(args).toMatch(/…\[truncated \d+ chars\]$/);
      expect(String(tool.attributes["gen_ai.tool.call.result"])).toBe('{"ok":true,"token":"[REDACTED]"}');
      const root = seen.find((span) => span.attributes["gen_ai.operation.name"] === "invoke_agent")!;
      expect(String(root.attributes["gen_ai.input.messages"])).toContain("hello yyyyyyyyyy");
      expect(String(root.attributes["gen_ai.output.messages"])).toContain("Logged in.");
      expect(root.attributes["gen_ai.system_instructions"] === undefined).toBe(mode === "content");
      expect(JSON.stringify(seen)).not.toContain(SECRET);
    });
  }

  it("a resumed run exports each piece of work once: no span for replayed steps or tool calls", async () => {
    const gated = { "tools/publish.ts": toolSource({ upFront: true, extra: 'needsApproval: approvalRequired("visible"),', execute: "return { published: true };" }) };
    const responses: ProbeResponse[] = [{ toolCalls: [{ name: "login", input: { user: "ada" } }, { name: "publish", input: { value: "v" } }] }, { text: "done" }];
    const { start, spans } = await runWith("usage", [], gated, () => replayingEngine(responses));
    const first = await start();
    const paused = await first.run({ message: "go" });
    expect(paused, JSON.stringify(paused)).toMatchObject({ status: "waiting_approval" });
    await first.close();
    expect(spans().map((span) => span.name).sort()).toEqual(["chat model", "execute_tool login", "step harness:model:0"]);
    // A new process (new bundle, setup run again) decides and finishes the run.
    const second = await start();
    expect((await second.approve(paused.runId)).status).toBe("completed");
    await second.close();
    const names = spans().map((span) => span.name).sort();
    expect(names).toEqual(["chat model", "chat model", "execute_tool login", "execute_tool publish", `invoke_agent ${second.manifest.agent.name}`, "step harness:model:0", "step harness:model:1"]);
    const ids = spans().map((span) => span.spanId);
    expect(new Set(ids).size).toBe(ids.length);
    const publish = spans().find((span) => span.name === "execute_tool publish")!;
    expect(publish.attributes["assembly_line.tool.approval"]).toBe("granted");
    const types = (await second.listEvents(paused.runId)).map((event) => event.type);
    expect(types).toContain("durable_step.replayed");
    expect(types).toContain("tool.replayed");
  });

  it("a setup that throws is a boot error naming instrumentation.ts", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "instrumentation.ts": `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({ setup: () => { throw new Error("OTEL_EXPORTER_OTLP_ENDPOINT is not set"); } });
`,
    });
    const { artifactRoot } = await buildAgent(dir);
    await expect(loadRuntimeBundle(artifactRoot)).rejects.toMatchObject({ code: "AL_ERR_INSTRUMENTATION_SETUP", message: expect.stringContaining("instrumentation.ts: setup() threw at startup: OTEL_EXPORTER_OTLP_ENDPOINT is not set") });
  });

  it("the compiler refuses an unknown captureContent and a file that is not defineInstrumentation", async () => {
    const bad = agentFolder({ "agent.ts": MINIMAL_AGENT, "instrumentation.ts": instrumentation("x", "verbose") });
    await expect(buildAgent(bad)).rejects.toMatchObject({ code: "AL_ERR_INSTRUMENTATION_DEFINITION", message: expect.stringContaining('captureContent "verbose"') });
    const plain = agentFolder({ "agent.ts": MINIMAL_AGENT, "instrumentation.ts": "export default { setup() {} };\n" });
    await expect(buildAgent(plain)).rejects.toMatchObject({ code: "AL_ERR_INSTRUMENTATION_DEFINITION" });
  });

  it("records instrumentation.ts in the manifest and its revision", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "instrumentation.ts": instrumentation("m", "content") });
    const { manifest } = await buildAgent(dir);
    expect(manifest.instrumentation).toMatchObject({ source: { file: "instrumentation.ts" }, captureContent: "content", serviceName: "telemetry-test" });
    expect(manifest.sources.map((source) => source.file)).toContain("instrumentation.ts");
  });
});
