import { afterEach, describe, expect, it } from "vitest";
import type { TelemetrySpan } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness, type ScriptedTurn } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const collected = globalThis as unknown as { __toolOutcomeSpans?: TelemetrySpan[] };
afterEach(() => void delete collected.__toolOutcomeSpans);

/** An agent whose publish tool needs an approval, exporting spans under `captureContent`; `start()` is one process. */
async function agent(captureContent: "usage" | "content", turns: ScriptedTurn[]) {
  const dir = agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/publish.ts": toolSource({ upFront: true, extra: 'needsApproval: approvalRequired("Publishing is externally visible."),' }),
    "instrumentation.ts": `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({
  captureContent: ${JSON.stringify(captureContent)},
  setup: () => ({ export(span) { (globalThis.__toolOutcomeSpans ??= []).push(span); } }),
});
`,
  });
  const { artifactRoot } = await buildAgent(dir);
  const state = new InMemoryStateAdapter();
  const start = async () => new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state, agentHarness: scriptedHarness({ turns }), logger: noopLogger() });
  return { start };
}

const spans = () => collected.__toolOutcomeSpans ?? [];
const spanNamed = (name: string) => spans().find((span) => span.name === name)!;
const root = () => spans().find((span) => span.attributes["gen_ai.operation.name"] === "invoke_agent")!;

describe("execute_tool spans of calls that did not run", () => {
  it("a denied call ends its span with the denial, in the process that decided it, under the run's root", async () => {
    const { start } = await agent("content", [{ toolCalls: [{ name: "publish", input: { value: "v" }, id: "call_pub" }] }, { text: "Not published." }]);
    const first = await start();
    const paused = await first.run({ message: "publish v" });
    expect(paused.status).toBe("waiting_approval");
    await first.close();
    // Another process takes the decision.
    const second = await start();
    expect((await second.deny(paused.runId, { reason: "not before the launch" })).status).toBe("completed");
    await second.close();

    const publish = spanNamed("execute_tool publish");
    expect(publish).toBeDefined();
    expect(publish).toMatchObject({ traceId: root().traceId, parentSpanId: root().spanId, status: { code: "error", message: "not before the launch" } });
    expect(publish.attributes).toMatchObject({
      "gen_ai.tool.call.id": "call_pub",
      "assembly_line.tool.outcome": "denied",
      "assembly_line.tool.approval": "denied",
      "error.type": "denied",
    });
    expect(JSON.parse(String(publish.attributes["gen_ai.tool.call.result"]))).toEqual({ denied: true, reason: "not before the launch" });
    // From the call to its denial, the wait for a person included.
    const events = await second.listEvents(paused.runId);
    expect(publish.startTimeMs).toBe(Date.parse(events.find((event) => event.type === "tool.called")!.createdAt));
    expect(publish.endTimeMs).toBe(Date.parse(events.find((event) => event.type === "approval.denied")!.createdAt));
  });

  it("a call the runtime refuses (unknown tool, invalid input) ends in error named by its outcome; under usage without the message, which quotes the input", async () => {
    const { start } = await agent("usage", [
      { toolCalls: [{ name: "publish", input: { value: 42, secret_note: "sk-do-not-export" }, id: "call_bad" }] },
      { toolCalls: [{ name: "no_such_tool", input: {}, id: "call_unknown" }] },
      { text: "Gave up." },
    ]);
    const runtime = await start();
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    await runtime.close();
    const tools = spans().filter((span) => span.attributes["gen_ai.operation.name"] === "execute_tool");
    expect(tools.map((span) => [span.attributes["gen_ai.tool.call.id"], span.status, span.attributes["error.type"]])).toEqual([
      ["call_bad", { code: "error", message: "input_invalid" }, "input_invalid"],
      ["call_unknown", { code: "error", message: "input_invalid" }, "input_invalid"],
    ]);
    expect(JSON.stringify(spans())).not.toContain("sk-do-not-export");
  });
});

describe("execute_tool spans of calls that asked a question", () => {
  const askTurns: ScriptedTurn[] = [{ toolCalls: [{ name: "ask_question", input: { question: "Which card?" }, id: "call_ask" }] }, { text: "Charged the card you named." }];

  it("ends the call's span with its answer, in the process that received it: from the call to the answer, the answer as its result", async () => {
    const { start } = await agent("content", askTurns);
    const first = await start();
    const paused = await first.run({ message: "charge me" });
    expect(paused.status).toBe("waiting_input");
    await first.close();
    expect(spans().filter((span) => span.name === "execute_tool ask_question")).toEqual([]);
    // Another process receives the answer.
    const second = await start();
    expect((await second.answer(paused.runId, "the one ending 4242")).status).toBe("completed");
    await second.close();

    const asked = spans().filter((span) => span.name === "execute_tool ask_question");
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ traceId: root().traceId, parentSpanId: root().spanId, status: { code: "ok" } });
    expect(asked[0]!.attributes).toMatchObject({ "gen_ai.tool.call.id": "call_ask", "assembly_line.tool.outcome": "completed" });
    expect(asked[0]!.attributes).not.toHaveProperty("error.type");
    expect(JSON.parse(String(asked[0]!.attributes["gen_ai.tool.call.arguments"]))).toEqual({ question: "Which card?" });
    expect(JSON.parse(String(asked[0]!.attributes["gen_ai.tool.call.result"]))).toEqual({ answer: "the one ending 4242" });
    // The wait for the person is the call's time.
    const events = await second.listEvents(paused.runId);
    expect(asked[0]!.startTimeMs).toBe(Date.parse(events.find((event) => event.type === "tool.called")!.createdAt));
    expect(asked[0]!.endTimeMs).toBe(Date.parse(events.find((event) => event.type === "input.received")!.createdAt));
  });

  it("keeps the question and the answer out of the span under usage", async () => {
    const { start } = await agent("usage", askTurns);
    const runtime = await start();
    const paused = await runtime.run({ message: "charge me" });
    expect((await runtime.answer(paused.runId, "the one ending 4242")).status).toBe("completed");
    await runtime.close();
    const asked = spanNamed("execute_tool ask_question");
    expect(asked.attributes).toMatchObject({ "assembly_line.tool.outcome": "completed" });
    expect(asked.attributes).not.toHaveProperty("gen_ai.tool.call.result");
    expect(asked.attributes).not.toHaveProperty("gen_ai.tool.call.arguments");
    expect(JSON.stringify(spans())).not.toContain("4242");
  });
});

describe("execute_tool spans of calls that failed", () => {
  /** One run of a tool whose execute throws what `throwing` says; the tool span it exported. */
  async function failedToolSpan(throwing: string, imports = "") {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/fetch_page.ts": toolSource({ upFront: true, imports, execute: throwing }),
      "instrumentation.ts": `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({ setup: () => ({ export(span) { (globalThis.__toolOutcomeSpans ??= []).push(span); } }) });
`,
    });
    const { artifactRoot } = await buildAgent(dir);
    const runtime = new OpenEveRuntime({
      ...(await loadRuntimeBundle(artifactRoot)),
      state: new InMemoryStateAdapter(),
      agentHarness: scriptedHarness({ turns: [{ toolCalls: [{ name: "fetch_page", input: { value: "v" }, id: "call_fail" }] }, { text: "never" }] }),
      logger: noopLogger(),
    });
    expect((await runtime.run({ message: "go" })).status).toBe("failed");
    await runtime.close();
    const tool = spanNamed("execute_tool fetch_page");
    delete collected.__toolOutcomeSpans;
    return tool;
  }

  it("types the error by the thrown error's class when it has no AL_ERR code, as docs/telemetry.md says", async () => {
    const typeError = await failedToolSpan(`throw new TypeError("cannot read url of undefined");`);
    expect(typeError.status.code).toBe("error");
    expect(typeError.attributes).toMatchObject({ "assembly_line.tool.outcome": "failed", "error.type": "TypeError" });
    const custom = await failedToolSpan(`class UpstreamTimeout extends Error { name = "UpstreamTimeout"; } throw new UpstreamTimeout("slow");`);
    expect(custom.attributes["error.type"]).toBe("UpstreamTimeout");
  });

  it("types it by the AL_ERR code when the error has one, and as tool_error when what was thrown is not an Error", async () => {
    const coded = await failedToolSpan(`throw new AssemblyLineError("AL_ERR_OUTBOUND_HOST_REFUSED", "no", { fix: "allow it" });`, `import { AssemblyLineError } from "@assemblyline-agents/core";`);
    expect(coded.attributes["error.type"]).toBe("AL_ERR_OUTBOUND_HOST_REFUSED");
    const thrownString = await failedToolSpan(`throw "plain text";`);
    expect(thrownString.attributes["error.type"]).toBe("tool_error");
  });
});
