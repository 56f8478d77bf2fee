import { Ajv } from "ajv";
import { describe, expect, it, vi } from "vitest";
import { approvalIdFor, InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import type { NewRunEvent, RunEvent, RunStateChange, ToolCallRecord } from "@assemblyline-agents/core";
import { createHash } from "node:crypto";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import type { CompletedOutcome } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";

const call = (name: string, input: unknown) => ({ toolCalls: [{ name, input: input as never }] });

describe("input schema check", () => {
  it("returns a schema violation to the model as a recoverable error, records it, and never executes", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true, execute: "globalThis.__echoRuns = (globalThis.__echoRuns ?? 0) + 1; return { echoed: input.value };" }) });
    const { runtime, log, types, events } = await startAgent(dir, [call("echo", { value: 42 }), call("echo", { value: "ok" }), { text: "done" }]);
    const result = await runtime.run({ message: "hi" });
    expect(result.status).toBe("completed");
    const first = log.outcomes[0]!.outcome;
    expect(first).toMatchObject({ status: "completed", isError: true });
    expect(JSON.stringify(first)).toContain("input/value must be string");
    expect(log.outcomes[1]!.outcome).toEqual({ status: "completed", output: { echoed: "ok" }, isError: false });
    expect((globalThis as { __echoRuns?: number }).__echoRuns).toBe(1);
    const recorded = await events(result.runId);
    const invalid = recorded.find((event) => event.type === "tool.input_invalid")!;
    expect(invalid.data).toMatchObject({ toolName: "echo", callId: "call_0_0" });
    expect(await types(result.runId)).toContain("run.completed");
  });

  it("checks a string against its schema's format, so a value that breaks it never reaches execute", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/notify.ts": toolSource({
        upFront: true,
        schema: `{ type: "object", properties: { email: { type: "string", format: "email" } }, required: ["email"], additionalProperties: false }`,
        execute: "globalThis.__notified = [...(globalThis.__notified ?? []), input.email]; return { sent: true };",
      }),
    });
    (globalThis as { __notified?: string[] }).__notified = [];
    const { runtime, log, events } = await startAgent(dir, [call("notify", { email: "not an email; rm -rf /" }), call("notify", { email: "ada@example.com" }), { text: "done" }]);
    const result = await runtime.run({ message: "notify" });
    expect(result.status).toBe("completed");
    expect(JSON.stringify(log.outcomes[0]!.outcome)).toContain('input/email must match format \\"email\\"');
    expect((await events(result.runId)).filter((event) => event.type === "tool.input_invalid")).toHaveLength(1);
    expect((globalThis as { __notified?: string[] }).__notified).toEqual(["ada@example.com"]);
  });
});

describe("tool schemas", () => {
  it("are compiled on a tool's first call, not when the runtime opens, and then kept", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/echo.ts": toolSource({ upFront: true }),
      "tools/count.ts": toolSource({ upFront: true, schema: `{ type: "object", properties: { count: { type: "integer" } }, required: ["count"] }` }),
    });
    const compile = vi.spyOn(Ajv.prototype, "compile");
    try {
      const compiled = () => compile.mock.calls.map(([schema]) => JSON.stringify(schema));
      const { runtime, log } = await startAgent(dir, [call("echo", { value: 42 }), call("echo", { value: "ok" }), { text: "done" }]);
      // The build checks the authored tools' schemas; the runtime compiles none, not even the built-ins'.
      const authored = ["echo", "count"].map((name) => JSON.stringify(runtime.toolTable.get(name)!.definition.inputSchema));
      expect(compiled().filter((schema) => !authored.includes(schema))).toEqual([]);
      compile.mockClear();
      const result = await runtime.run({ message: "hi" });
      expect(result.status).toBe("completed");
      expect(JSON.stringify(log.outcomes[0]!.outcome)).toContain("input/value must be string");
      expect(log.outcomes[1]!.outcome).toMatchObject({ output: { echoed: "ok" }, isError: false });
      // echo's input schema, once for both calls; nothing else.
      expect(compiled()).toEqual([authored[0]]);
    } finally {
      compile.mockRestore();
    }
  });
});

describe("approval gate", () => {
  const gated = () =>
    agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/publish.ts": toolSource({
        upFront: true,
        extra: `needsApproval: approvalRequired("Publishing is externally visible."),`,
        execute: "return { published: input.value, approved: ctx.approvedToolCall };",
      }),
    });

  it("pauses in waiting_approval and, once approved, executes with approvedToolCall true", async () => {
    const { runtime, log, types, events } = await startAgent(gated(), [call("publish", { value: "v1" }), { text: "published" }]);
    const paused = await runtime.run({ message: "publish" });
    expect(paused.status).toBe("waiting_approval");
    expect(paused.pendingApprovals).toHaveLength(1);
    // The approver sees why it waits and what kind of effect it has, where the run's result is shown (HTTP, CLI).
    expect(paused.pendingApprovals![0]).toMatchObject({ toolName: "publish", reason: "Publishing is externally visible.", sideEffect: "external" });
    expect(await runtime.getRun(paused.runId)).toMatchObject({ pendingApprovals: [{ reason: "Publishing is externally visible.", sideEffect: "external" }] });
    const requested = (await events(paused.runId)).find((event) => event.type === "approval.requested")!;
    expect(requested.data).toMatchObject({ toolName: "publish", reason: "Publishing is externally visible.", sideEffect: "external" });

    const done = await runtime.approve(paused.runId);
    expect(done.status).toBe("completed");
    expect(log.outcomes.at(-1)!.outcome).toEqual({ status: "completed", output: { published: "v1", approved: true }, isError: false });
    expect(await types(paused.runId)).toEqual(expect.arrayContaining(["approval.granted", "tool.completed", "run.completed"]));
  });

  it("sends the model a denial result when denied, without executing", async () => {
    const { runtime, log, types } = await startAgent(gated(), [call("publish", { value: "v1" }), { text: "ok, not published" }]);
    const paused = await runtime.run({ message: "publish" });
    const done = await runtime.deny(paused.runId, { reason: "not today" });
    expect(done.status).toBe("completed");
    const outcome = log.outcomes.at(-1)!.outcome;
    expect(outcome).toMatchObject({ status: "completed", isError: true, output: { denied: true, reason: "not today" } });
    expect(await types(paused.runId)).toContain("approval.denied");
    expect(await types(paused.runId)).not.toContain("tool.completed");
  });

  it("binds the approval id to run, call and input digest, and makes it single-use", async () => {
    const { runtime } = await startAgent(gated(), [call("publish", { value: "v1" }), { text: "done" }]);
    const paused = await runtime.run({ message: "publish" });
    const pending = paused.pendingApprovals![0]!;
    const digest = createHash("sha256").update(JSON.stringify({ value: "v1" })).digest("hex");
    expect(pending.approvalId).toBe(approvalIdFor(paused.runId, pending.callId, digest));
    expect(approvalIdFor(paused.runId, pending.callId, "other")).not.toBe(pending.approvalId);
    expect(approvalIdFor("run_other", pending.callId, digest)).not.toBe(pending.approvalId);
    await runtime.approve(paused.runId, { callId: pending.approvalId });
    await expect(runtime.approve(paused.runId, { callId: pending.approvalId })).rejects.toThrow(/AL_ERR_RUN_NOT_RESUMABLE/);
  });

  it("names the pending calls when an approval id does not match", async () => {
    const { runtime } = await startAgent(gated(), [call("publish", { value: "v1" }), { text: "done" }]);
    const paused = await runtime.run({ message: "publish" });
    await expect(runtime.approve(paused.runId, { callId: "call_nope" })).rejects.toThrow(/AL_ERR_APPROVAL_NOT_FOUND[\s\S]*call_0_0/);
  });
});

describe("ctx.askQuestion", () => {
  it("suspends in waiting_input, never runs code after it, and gives the model the answer as the call's result", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/confirm.ts": toolSource({
        upFront: true,
        execute: `await ctx.askQuestion("Which color?", { choices: ["red", "blue"] });
    globalThis.__afterQuestion = true;
    return { unreachable: true };`,
      }),
    });
    const { runtime, log, events } = await startAgent(dir, [call("confirm", { value: "x" }), { text: "thanks" }]);
    const paused = await runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_input");
    expect(paused.question).toMatchObject({ toolName: "confirm", question: { question: "Which color?", choices: ["red", "blue"] } });
    const done = await runtime.answer(paused.runId, "blue");
    expect(done.status).toBe("completed");
    expect((globalThis as { __afterQuestion?: boolean }).__afterQuestion).toBeUndefined();
    expect(log.outcomes.at(-1)!.outcome).toEqual({ status: "completed", output: { answer: "blue" }, isError: false });
    const recorded = (await events(paused.runId)).map((event) => event.type);
    expect(recorded).toEqual(expect.arrayContaining(["input.requested", "run.waiting_input", "input.received", "run.completed"]));
  });

  it("pauses even when the tool catches the suspension", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/sneaky.ts": toolSource({ upFront: true, execute: `try { await ctx.askQuestion("Sure?"); } catch {} return { swallowed: true };` }),
    });
    const { runtime } = await startAgent(dir, [call("sneaky", { value: "x" }), { text: "done" }]);
    expect((await runtime.run({ message: "go" })).status).toBe("waiting_input");
  });

  it("records nothing a tool does after catching the suspension: its ctx refuses with the same question", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/sneaky.ts": toolSource({
        upFront: true,
        execute: `try { await ctx.askQuestion("Sure?"); } catch {}
    const refused = [];
    for (const act of [() => ctx.emit("note.after_question", { ran: true }), () => ctx.step("after", async () => 1), () => ctx.askQuestion("Another?"), () => ctx.getSandbox()]) {
      try { await act(); refused.push(false); } catch (error) { refused.push(error.message); }
    }
    globalThis.__refusedAfterQuestion = refused;
    return { swallowed: true };`,
      }),
    });
    const { runtime, events } = await startAgent(dir, [call("sneaky", { value: "x" }), { text: "done" }]);
    const paused = await runtime.run({ message: "go" });
    expect(paused).toMatchObject({ status: "waiting_input", question: { question: { question: "Sure?" } } });
    const refused = (globalThis as { __refusedAfterQuestion?: unknown[] }).__refusedAfterQuestion!;
    expect(refused).toHaveLength(4);
    for (const outcome of refused) expect(outcome).toEqual(expect.stringContaining("Sure?"));
    const recorded = await events(paused.runId);
    expect(recorded.map((event) => event.type)).not.toContain("note.after_question");
    expect(recorded.filter((event) => event.type === "durable_step.completed" && event.data.key === "after")).toEqual([]);
  });
});

describe("ctx.emit", () => {
  it("leaves out a key whose value is undefined, as JSON does, and refuses other non-JSON data", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/note.ts": toolSource({
        upFront: true,
        execute: `await ctx.emit("note.taken", { a: undefined, b: 1 });
    const refused = await ctx.emit("note.bad", { when: new Date(0) }).then(() => false, (error) => error.code);
    return { refused };`,
      }),
    });
    const { runtime, events, log } = await startAgent(dir, [call("note", { value: "x" }), { text: "done" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const taken = (await events(result.runId)).find((event) => event.type === "note.taken");
    expect(taken?.data).toEqual({ b: 1, toolCallId: expect.any(String) });
    expect(log.outcomes[0]!.outcome).toMatchObject({ status: "completed", output: { refused: "AL_ERR_TOOL_OUTPUT" } });
  });
});

describe("durable steps and replay", () => {
  const stepAgent = () =>
    agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/hydrate.ts": toolSource({
        upFront: true,
        execute: `const profile = await ctx.step("hydrate:" + input.value, async () => {
      globalThis.__hydrations = (globalThis.__hydrations ?? 0) + 1;
      return { id: input.value, key: ctx.idempotencyKey("customer") };
    }, { metadata: { customerId: input.value } });
    return { profile };`,
      }),
      "tools/publish.ts": toolSource({ upFront: true, extra: `needsApproval: true,`, execute: "return { ok: true };" }),
    });

  it("replays a completed step and a completed tool call on resume instead of running them again", async () => {
    (globalThis as { __hydrations?: number }).__hydrations = 0;
    const { runtime, log, events } = await startAgent(stepAgent(), [
      { toolCalls: [{ name: "hydrate", input: { value: "c1" } }, { name: "publish", input: { value: "p" } }] },
      { text: "done" },
    ]);
    const paused = await runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    const done = await runtime.approve(paused.runId);
    expect(done.status).toBe("completed");
    // The probe engine restarted from its first model call: the journal answered for the model and the tool.
    expect(log.modelCalls).toBe(2);
    expect((globalThis as { __hydrations?: number }).__hydrations).toBe(1);
    const recorded = await events(paused.runId);
    expect(recorded.filter((event) => event.type === "tool.replayed").map((event) => event.data.toolName)).toEqual(["hydrate"]);
    expect(recorded.filter((event) => event.type === "durable_step.replayed").map((event) => event.data.key)).toEqual(["harness:model:0"]);
    const hydrateOutcomes = log.outcomes.filter((entry) => entry.call.name === "hydrate").map((entry) => entry.outcome);
    expect(hydrateOutcomes[0]).toEqual(hydrateOutcomes[1]);
    const completedStep = recorded.find((event) => event.type === "durable_step.completed" && event.data.key === "hydrate:c1")!;
    expect(completedStep.data.metadata).toEqual({ customerId: "c1" });
  });

  it("records durable_step.replayed when a step key repeats within the run", async () => {
    const { runtime, events } = await startAgent(stepAgent(), [
      { toolCalls: [{ name: "hydrate", input: { value: "c1" } }] },
      { toolCalls: [{ name: "hydrate", input: { value: "c1" } }] },
      { text: "done" },
    ]);
    (globalThis as { __hydrations?: number }).__hydrations = 0;
    const result = await runtime.run({ message: "go" });
    expect((globalThis as { __hydrations?: number }).__hydrations).toBe(1);
    expect((await events(result.runId)).some((event) => event.type === "durable_step.replayed" && event.data.key === "hydrate:c1")).toBe(true);
  });

  it("refuses a tool's step under the engine's keys (harness:), which would replay the engine's model call as the tool's result", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/forge.ts": toolSource({ upFront: true, execute: `return await ctx.step("harness:model:0", async () => ({ forged: true }));` }),
    });
    const { runtime, events } = await startAgent(dir, [{ toolCalls: [{ name: "forge", input: { value: "1" } }] }, { text: "never" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "AL_ERR_STEP_RESULT", message: expect.stringContaining('keys starting with "harness:" are the engine\'s') });
    expect((await events(result.runId)).filter((event) => event.type === "durable_step.replayed")).toEqual([]);
  });

  it("keeps ctx.idempotencyKey stable per run, tool call and scope", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/keys.ts": toolSource({ upFront: true, execute: `return { a: ctx.idempotencyKey("x"), b: ctx.idempotencyKey("x"), c: ctx.idempotencyKey("y") };` }),
    });
    const { runtime, log } = await startAgent(dir, [{ toolCalls: [{ name: "keys", input: { value: "1" } }, { name: "keys", input: { value: "1" } }] }, { text: "ok" }]);
    await runtime.run({ message: "go" });
    const [first, second] = log.outcomes.map((entry) => entry.outcome as CompletedOutcome<{ a: string; b: string; c: string }>);
    expect(first!.output.a).toBe(first!.output.b);
    expect(first!.output.a).not.toBe(first!.output.c);
    expect(first!.output.a).not.toBe(second!.output.a);
  });
});

/** In-memory state whose appends take `delayMs` (a store that waits for its disk), keeping the tool call each append wrote. */
class SlowAppends extends InMemoryStateAdapter {
  readonly toolCallsWritten: ToolCallRecord[] = [];

  constructor(private readonly delayMs: number) {
    super();
  }

  override async appendEvents(runId: string, events: NewRunEvent[], change?: RunStateChange, options?: Parameters<InMemoryStateAdapter["appendEvents"]>[3]): Promise<RunEvent[]> {
    if (change?.toolCall) this.toolCallsWritten.push(structuredClone(change.toolCall));
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    return super.appendEvents(runId, events, change, options);
  }
}

describe("results", () => {
  it("keeps the tool call's createdAt from when it was recorded, however long that write took", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true, execute: "return { echoed: input.value };" }) });
    const state = new SlowAppends(25);
    const { runtime } = await startAgent(dir, [call("echo", { value: "x" }), { text: "done" }], { state });
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const [requested, completed] = state.toolCallsWritten;
    expect(requested).toMatchObject({ callId: "call_0_0", status: "requested" });
    expect(completed).toMatchObject({ callId: "call_0_0", status: "completed" });
    expect(completed!.createdAt).toBe(requested!.createdAt);
    expect(Date.parse(completed!.updatedAt)).toBeGreaterThanOrEqual(Date.parse(requested!.createdAt) + 20);
    expect((await state.getToolCall(result.runId, "call_0_0"))!.createdAt).toBe(requested!.createdAt);
  });

  it("shows the model toModelOutput and persists the full result", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/lookup.ts": toolSource({
        upFront: true,
        execute: `return { summary: "Found " + input.value, internalScore: 0.98 };`,
        extra: `toModelOutput(output) { return { summary: output.summary }; },`,
      }),
    });
    const { runtime, log, state } = await startAgent(dir, [call("lookup", { value: "x" }), { text: "ok" }]);
    const result = await runtime.run({ message: "go" });
    expect(log.outcomes[0]!.outcome).toEqual({ status: "completed", output: { summary: "Found x" }, isError: false });
    const stored = await state.getToolCall(result.runId, "call_0_0");
    expect(stored!.output).toEqual({ summary: "Found x", internalScore: 0.98 });
  });

  it("fails the call and the run with a clear error when the result is not JSON-serializable", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/dated.ts": toolSource({ upFront: true, execute: `return { when: new Date(0) };` }) });
    const { runtime, events } = await startAgent(dir, [call("dated", { value: "x" }), { text: "never" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    const failed = (await events(result.runId)).find((event) => event.type === "tool.execution_failed")!;
    expect(failed.data.error).toMatch(/dated result\.when is a Date.*toISOString/);
    expect(failed.data.code).toBe("AL_ERR_TOOL_OUTPUT");
  });

  it("fails the tool call and the run when execute throws, surfacing { error } to the model", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/broken.ts": toolSource({ upFront: true, execute: `throw new Error("database is down");` }) });
    const { runtime, log, types } = await startAgent(dir, [call("broken", { value: "x" }), { text: "never" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error?.message).toContain("database is down");
    expect(log.outcomes[0]!.outcome).toEqual({ status: "failed", output: { error: "database is down" } });
    expect(log.modelCalls).toBe(1);
    const recorded = await types(result.runId);
    expect(recorded).toContain("tool.execution_failed");
    expect(recorded.at(-1)).toBe("run.failed");
  });

  it("does not fail the run for an error-shaped return", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/careful.ts": toolSource({ upFront: true, execute: `return { error: "Run validate first." };` }) });
    const { runtime, log } = await startAgent(dir, [call("careful", { value: "x" }), { text: "I will validate" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toEqual({ status: "completed", output: { error: "Run validate first." }, isError: true });
  });

  it("shows the model an error-shaped refusal as the tool returned it, neither projected by toModelOutput nor held to outputSchema", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/lookup.ts": toolSource({
        upFront: true,
        execute: `if (input.value !== "validated") return { error: "Run validate first." };
    return { summary: "Found " + input.value, internalScore: 0.98 };`,
        extra: `outputSchema: { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] },
  toModelOutput(output) { return { summary: output.summary }; },`,
      }),
    });
    const { runtime, log, state } = await startAgent(dir, [call("lookup", { value: "x" }), call("lookup", { value: "validated" }), { text: "done" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    expect(log.outcomes.map((entry) => entry.outcome)).toEqual([
      { status: "completed", output: { error: "Run validate first." }, isError: true },
      { status: "completed", output: { summary: "Found validated" }, isError: false },
    ]);
    expect(await state.getToolCall(result.runId, "call_0_0")).toMatchObject({ status: "completed", output: { error: "Run validate first." }, modelOutput: { error: "Run validate first." } });
  });

  it("leaves out keys whose value is undefined, in the result and in toModelOutput's projection, as JSON does", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/lookup.ts": toolSource({
        upFront: true,
        execute: `const record = { id: input.value }; return { id: record.id, note: record.note, meta: { tag: undefined, size: 1 }, items: [{ label: undefined }] };`,
        extra: `toModelOutput(output) { return { id: output.id, note: output.note }; },`,
      }),
    });
    const { runtime, log, state } = await startAgent(dir, [call("lookup", { value: "a" }), { text: "ok" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toEqual({ status: "completed", output: { id: "a" }, isError: false });
    const stored = await state.getToolCall(result.runId, "call_0_0");
    expect(stored!.output).toStrictEqual({ id: "a", meta: { size: 1 }, items: [{}] });
    expect(stored!.modelOutput).toStrictEqual({ id: "a" });
  });

  it("still refuses undefined where JSON would not leave it out: an array item, or no result at all", async () => {
    for (const [execute, problem] of [
      [`return { items: [undefined] };`, "listed result.items[0] is undefined"],
      [`return undefined;`, "listed result is undefined"],
    ] as const) {
      const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/listed.ts": toolSource({ upFront: true, execute }) });
      const { runtime, events } = await startAgent(dir, [call("listed", { value: "x" }), { text: "never" }]);
      const result = await runtime.run({ message: "go" });
      expect(result.status).toBe("failed");
      const failed = (await events(result.runId)).find((event) => event.type === "tool.execution_failed")!;
      expect(failed.data).toMatchObject({ code: "AL_ERR_TOOL_OUTPUT", error: expect.stringContaining(problem) });
    }
  });

  it("keeps the full result recorded with the failed call when toModelOutput throws or returns a Promise", async () => {
    for (const [projection, error] of [
      [`toModelOutput(output) { throw new Error("projection broke"); },`, "projection broke"],
      [`toModelOutput(output) { return Promise.resolve({ published: output.published }); },`, "publish: toModelOutput returned a Promise; it must return the projection itself"],
    ] as const) {
      const dir = agentFolder({
        "agent.ts": MINIMAL_AGENT,
        "tools/publish.ts": toolSource({ upFront: true, execute: `return { published: true, externalId: "ext_123" };`, extra: projection }),
      });
      const { runtime, state, events } = await startAgent(dir, [call("publish", { value: "x" }), { text: "never" }]);
      const result = await runtime.run({ message: "go" });
      expect(result.status).toBe("failed");
      expect(result.error?.message).toContain(error);
      const full = { published: true, externalId: "ext_123" };
      expect(await state.getToolCall(result.runId, "call_0_0")).toMatchObject({ status: "failed", output: full, error: expect.stringContaining(error) });
      expect((await events(result.runId)).find((event) => event.type === "tool.execution_failed")?.data).toMatchObject({ output: full });
    }
  });

  it("checks outputSchema", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/typed.ts": toolSource({ upFront: true, execute: `return { count: "three" };`, extra: `outputSchema: { type: "object", properties: { count: { type: "number" } } },` }),
    });
    const { runtime } = await startAgent(dir, [call("typed", { value: "x" }), { text: "never" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error?.message).toMatch(/outputSchema.*output\/count must be number/);
  });
});
