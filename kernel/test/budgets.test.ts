import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness, type ModelScript, type RuntimeOptions } from "@assemblyline-agents/runtime";
import { DEFAULT_RUN_BUDGETS, type AgentHarness, type RunEvent } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { agentFolder, toolSource } from "./support/agent-folder.js";

const agentWith = (budgets?: string, tool = toolSource({ upFront: true })) =>
  agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "Loop." ${budgets ? `, budgets: ${budgets}` : ""} });
`,
    "tools/echo.ts": tool,
  });

/** A model that calls the tool on every turn and never answers. */
const forever: ModelScript = { turns: [{ toolCalls: [{ name: "echo", input: { value: "again" } }] }], loop: true };

async function runtimeFor(dir: string, options: Partial<RuntimeOptions> = {}) {
  const { artifactRoot } = await buildAgent(dir);
  const bundle = await loadRuntimeBundle(artifactRoot);
  const state = (options.state as InMemoryStateAdapter | undefined) ?? new InMemoryStateAdapter();
  return new OpenEveRuntime({ ...bundle, state, agentHarness: scriptedHarness(forever), logger: noopLogger(), ...options });
}

const count = (events: RunEvent[], type: string) => events.filter((event) => event.type === type).length;

describe("run budgets", () => {
  it("stops a model that calls a tool forever at the default maxTurns", async () => {
    const runtime = await runtimeFor(agentWith());
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("AL_ERR_BUDGET_EXCEEDED");
    const events = await runtime.listEvents(result.runId);
    const exceeded = events.find((event) => event.type === "budget.exceeded");
    expect(exceeded?.data).toEqual({ budget: "maxTurns", limit: DEFAULT_RUN_BUDGETS.maxTurns, used: DEFAULT_RUN_BUDGETS.maxTurns, action: "fail" });
    expect(count(events, "tool.completed")).toBe(DEFAULT_RUN_BUDGETS.maxTurns);
    // The refusal and the failure are one record: nothing after them.
    expect(events.slice(-2).map((event) => event.type)).toEqual(["budget.exceeded", "run.failed"]);
  });

  it("stops at agent.ts maxToolCalls before executing the call past it", async () => {
    const runtime = await runtimeFor(agentWith("{ maxToolCalls: 3 }"));
    const result = await runtime.run({ message: "go" });
    const events = await runtime.listEvents(result.runId);
    expect(result.error?.code).toBe("AL_ERR_BUDGET_EXCEEDED");
    expect(events.find((event) => event.type === "budget.exceeded")?.data).toEqual({ budget: "maxToolCalls", limit: 3, used: 3, action: "fail" });
    expect(count(events, "tool.called")).toBe(3);
    expect(count(events, "tool.completed")).toBe(3);
  });

  it("lets the host's ceiling win over agent.ts, and agent.ts win under the host's", async () => {
    const lowered = await runtimeFor(agentWith("{ maxTurns: 10 }"), { budgets: { maxTurns: 4 } });
    const loweredRun = await lowered.run({ message: "go" });
    expect((await lowered.listEvents(loweredRun.runId)).find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxTurns", limit: 4 });

    const kept = await runtimeFor(agentWith("{ maxTurns: 3 }"), { budgets: { maxTurns: 10 } });
    const keptRun = await kept.run({ message: "go" });
    expect((await kept.listEvents(keptRun.runId)).find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxTurns", limit: 3 });
  });

  it("counts from the durable records, so resuming in a fresh runtime does not reset the count", async () => {
    const approvalTool = toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Each call is reviewed."),` });
    const dir = agentWith("{ maxTurns: 3 }", approvalTool);
    const state = new InMemoryStateAdapter();
    let result = await (await runtimeFor(dir, { state })).run({ message: "go" });
    const statuses: string[] = [result.status];
    // Each approval comes through a runtime that has never seen the run, as after a restart.
    for (let decisions = 0; result.status === "waiting_approval" && decisions < 10; decisions += 1) {
      result = await (await runtimeFor(dir, { state })).approve(result.runId);
      statuses.push(result.status);
    }
    expect(statuses).toEqual(["waiting_approval", "waiting_approval", "waiting_approval", "failed"]);
    const events = await state.listEvents(result.runId);
    expect(events.find((event) => event.type === "budget.exceeded")?.data).toEqual({ budget: "maxTurns", limit: 3, used: 3, action: "fail" });
    expect(count(events, "tool.completed")).toBe(3);
  });

  it("does not count the time a run waited for a human against maxDurationMs", async () => {
    const approvalTool = toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Reviewed."),` });
    const dir = agentWith("{ maxDurationMs: 150 }", approvalTool);
    const state = new InMemoryStateAdapter();
    const script: ModelScript = { turns: [{ toolCalls: [{ name: "echo", input: { value: "a" } }] }, { text: "done" }] };
    const paused = await (await runtimeFor(dir, { state, agentHarness: scriptedHarness(script) })).run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const done = await (await runtimeFor(dir, { state, agentHarness: scriptedHarness(script) })).approve(paused.runId);
    expect(done.status).toBe("completed");
  });

  it("stops a run whose active time passed maxDurationMs", async () => {
    const slowTool = toolSource({ upFront: true, execute: `await new Promise((resolve) => setTimeout(resolve, 60)); return { ok: true };` });
    const runtime = await runtimeFor(agentWith("{ maxDurationMs: 50 }", slowTool));
    const result = await runtime.run({ message: "go" });
    const exceeded = (await runtime.listEvents(result.runId)).find((event) => event.type === "budget.exceeded");
    expect(exceeded?.data).toMatchObject({ budget: "maxDurationMs", limit: 50 });
    expect(exceeded?.data.used as number).toBeGreaterThanOrEqual(50);
  });

  it("stops a model call still running when maxDurationMs is reached (a stream that stalls), and fails the run over that budget", async () => {
    // A provider that sent its headers and then nothing: the call ends only when the run's signal stops it.
    const stalled: AgentHarness = {
      name: "stalled",
      async runTurn(_input, ctx) {
        await ctx.modelCall("stalled", () => new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true })));
        return { status: "completed", response: { text: "never" } };
      },
    };
    const runtime = await runtimeFor(agentWith("{ maxDurationMs: 100 }"), { agentHarness: stalled });
    const result = await runtime.run({ message: "go" });
    expect(result).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
    const events = await runtime.listEvents(result.runId);
    expect(events.find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxDurationMs", limit: 100, action: "fail" });
    expect(events.find((event) => event.type === "model.failed")?.data.error).toContain("maxDurationMs");
  });

  it("stops waiting for a tool that never returns once maxDurationMs is reached, fails the run over that budget, and never records the tool's late result", async () => {
    (globalThis as { __release?: () => void }).__release = undefined;
    // A tool that ignores ctx.signal (a request without a timeout), released by hand only after the run ended.
    const hung = toolSource({ upFront: true, execute: `await new Promise((resolve) => { globalThis.__release = resolve; }); await ctx.emit("note.late", {}); return { late: true };` });
    const state = new InMemoryStateAdapter();
    const runtime = await runtimeFor(agentWith("{ maxDurationMs: 200 }", hung), { state, agentHarness: scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "x" } }] }, { text: "done" }] }) });
    const outcome = await Promise.race([runtime.run({ message: "go" }), new Promise((resolve) => setTimeout(() => resolve("still running 3 s after maxDurationMs"), 3000))]);
    expect(outcome).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
    const { runId } = outcome as { runId: string };
    expect(await state.getToolCall(runId, "call_0_0")).toMatchObject({ status: "failed", error: expect.stringContaining("tool echo was stopped before it returned") });
    // The run let go of its lease: another replica could act on it at once.
    expect((await state.getRun(runId))?.lease ?? null).toBeNull();

    (globalThis as { __release?: () => void }).__release?.();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const events = await runtime.listEvents(runId);
    expect(events.map((event) => event.type)).not.toContain("note.late");
    expect(events.map((event) => event.type)).not.toContain("tool.completed");
    expect(await state.getToolCall(runId, "call_0_0")).toMatchObject({ status: "failed" });
  }, 10_000);

  it("runs a tool call that maxDurationMs stopped mid-way again when its pause is approved, with the same idempotency key, and the run goes on", async () => {
    const g = globalThis as { __keys?: string[] };
    g.__keys = [];
    // The first execution hangs past the limit (it ignores ctx.signal); the one after the approval returns.
    const slowOnce = toolSource({
      upFront: true,
      execute: `globalThis.__keys.push(ctx.idempotencyKey("write"));
    if (globalThis.__keys.length === 1) await new Promise((resolve) => setTimeout(resolve, 400));
    return { written: input.value };`,
    });
    const state = new InMemoryStateAdapter();
    const script: ModelScript = { turns: [{ toolCalls: [{ name: "echo", input: { value: "x" } }] }, { text: "done" }] };
    const runtime = await runtimeFor(agentWith(`{ maxDurationMs: 150, onExceeded: "pause" }`, slowOnce), { state, agentHarness: scriptedHarness(script) });
    const paused = await runtime.run({ message: "go" });
    expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxDurationMs" } });
    // Left as a crash leaves it, not failed: the approved replay runs it.
    expect(await state.getToolCall(paused.runId, "call_0_0")).toMatchObject({ status: "requested" });

    const approved = await runtime.approve(paused.runId);
    expect(approved).toMatchObject({ status: "completed", response: { text: "done" } });
    expect(await state.getToolCall(paused.runId, "call_0_0")).toMatchObject({ status: "completed", output: { written: "x" } });
    expect(g.__keys).toHaveLength(2);
    expect(g.__keys[1]).toBe(g.__keys[0]);
    const events = await runtime.listEvents(paused.runId);
    expect(count(events, "tool.execution_failed")).toBe(0);
    expect(count(events, "tool.called")).toBe(1);
  });

  it("counts as active neither the time a run stood queued nor the time between two decisions of one pause", async () => {
    const gated = toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Checked by a human."),` });
    const dir = agentWith("{ maxDurationMs: 300 }", gated);
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    const queued = await runtimeFor(agentWith("{ maxDurationMs: 300 }"), { agentHarness: scriptedHarness({ turns: [{ text: "done" }] }) });
    const { runId } = await queued.submit({ message: "go" });
    await wait(400);
    expect((await queued.start(runId)).status).toBe("completed");

    // An engine that makes both calls of a turn at once: one pause waits on two decisions.
    const both: AgentHarness = {
      name: "both",
      async runTurn(input, ctx) {
        await ctx.modelCall("model:0", () => ({}));
        const outcomes = await Promise.all(["a", "b"].map((value, index) => ctx.callTool({ id: `c${index}`, name: "echo", input: { value } })));
        if (outcomes.some((outcome) => outcome.status === "paused")) return { status: "paused", continuation: { version: 1, harness: "both", agentRevision: input.agentRevision, data: {} } };
        // The model is asked again once both calls are decided: the duration budget is checked there.
        await ctx.modelCall("model:1", () => ({}));
        return { status: "completed", response: { text: "done" } };
      },
    };
    const runtime = await runtimeFor(dir, { agentHarness: both });
    const paused = await runtime.run({ message: "go" });
    expect(paused.pendingApprovals?.map((pending) => pending.callId)).toEqual(["c0", "c1"]);
    expect((await runtime.approve(paused.runId, { callId: "c0" })).status).toBe("waiting_approval");
    await wait(400);
    const done = await runtime.approve(paused.runId, { callId: "c1" });
    expect(done).toMatchObject({ status: "completed", response: { text: "done" } });
  });

  it("counts maxDurationMs from the run's start after a resume, not from when run.started was written (after the first model call)", async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // Two model calls of 300 ms each, with a tool call between them that a human approves at once: 600 ms active.
    const slow: AgentHarness = {
      name: "slow",
      async runTurn(input, ctx) {
        await ctx.modelCall("model:0", () => sleep(300).then(() => ({})));
        const outcome = await ctx.callTool({ id: "c1", name: "echo", input: { value: "x" } });
        if (outcome.status === "paused") return { status: "paused", continuation: { version: 1, harness: "slow", agentRevision: input.agentRevision, data: {} } };
        await ctx.modelCall("model:1", () => sleep(300).then(() => ({})));
        await ctx.modelCall("model:2", () => ({}));
        return { status: "completed", response: { text: "done" } };
      },
    };
    const gated = toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Reviewed."),` });
    const runtime = await runtimeFor(agentWith("{ maxDurationMs: 500 }", gated), { agentHarness: slow });
    const paused = await runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    const done = await runtime.approve(paused.runId);
    expect(done).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
    const events = await runtime.listEvents(paused.runId);
    expect(events.find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxDurationMs", limit: 500 });
    // The start is the time the driver held the event, before the first model call, not its commit after it.
    const started = events.find((event) => event.type === "run.started")!;
    expect(Date.parse(started.createdAt) - Date.parse(started.data.startedAt as string)).toBeGreaterThanOrEqual(250);
  });

  it("grows a measured budget from what was used, so one approval lets the run go on, and keeps a denial's reason", async () => {
    const replies = [{ toolCalls: [{ name: "echo", input: { value: "a" } }] }, { toolCalls: [{ name: "echo", input: { value: "b" } }] }, { text: "done" }];
    // Each model call spends 250 tokens, past a maxTokens of 100 in one call.
    const spending: AgentHarness = {
      name: "spending",
      async runTurn(_input, ctx) {
        for (let turn = 0; ; turn++) {
          const reply = await ctx.modelCall(`model:${turn}`, async () => {
            await ctx.recordUsage({ id: `${ctx.runId}:model:${turn}`, provider: "test", model: "m", inputTokens: 200, outputTokens: 50, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 });
            return replies[turn]!;
          });
          if ("text" in reply) return { status: "completed", response: { text: reply.text! } };
          await ctx.callTool({ id: `call_${turn}`, name: reply.toolCalls![0]!.name, input: reply.toolCalls![0]!.input });
        }
      },
    };
    const state = new InMemoryStateAdapter();
    const dir = agentWith('{ maxTokens: 100, onExceeded: "pause" }');
    const runtime = await runtimeFor(dir, { state, agentHarness: spending });
    const paused = await runtime.run({ message: "go" });
    expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxTokens", limit: 100, used: 250 } });
    const next = await runtime.approve(paused.runId);
    // From 250 used, 100 more: the next call is made before the pause comes again.
    expect(next).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxTokens", limit: 350, used: 500 } });
    const denied = await runtime.deny(paused.runId, { actor: "ops", reason: "too expensive" });
    expect(denied.status).toBe("failed");
    expect((await state.listEvents(paused.runId)).find((event) => event.type === "run.failed")?.data).toMatchObject({ actor: "ops", reason: "too expensive" });
  });

  it("pauses for a human with onExceeded: pause, grows the budget on approval and fails the run on denial", async () => {
    const dir = agentWith('{ maxTurns: 3, onExceeded: "pause" }');
    const state = new InMemoryStateAdapter();
    const paused = await (await runtimeFor(dir, { state })).run({ message: "go" });
    expect(paused).toMatchObject({ status: "waiting_approval", pendingApprovals: [], pendingBudget: { budget: "maxTurns", limit: 3, used: 3 } });

    // A call id names a tool call: the budget pause has none, and is left as it is.
    const naming = await runtimeFor(dir, { state });
    await expect(naming.approve(paused.runId, { callId: "call_0_0" })).rejects.toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND", message: expect.stringContaining("maxTurns budget") });
    await expect(naming.deny(paused.runId, { callId: "call_0_0" })).rejects.toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND" });
    expect(await naming.getRun(paused.runId)).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxTurns", limit: 3, used: 3 } });

    // Another agent sharing the store does not act on this agent's runs.
    const other = await runtimeFor(agentWith('{ maxTurns: 3, onExceeded: "pause" }'), { state });
    expect(other.manifest.agent.id).not.toBe(naming.manifest.agent.id);
    for (const act of [() => other.approve(paused.runId), () => other.deny(paused.runId), () => other.answer(paused.runId, "yes"), () => other.resume(paused.runId), () => other.migrateRun(paused.runId)]) {
      await expect(act()).rejects.toMatchObject({ code: "AL_ERR_RUN_NOT_FOUND", message: expect.stringContaining(`belongs to agent "${naming.manifest.agent.id}"`) });
    }
    expect(await naming.getRun(paused.runId)).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxTurns", limit: 3, used: 3 } });

    // Approved in a runtime that has never seen the run: the turn is replayed from the journal, then goes on.
    const again = await (await runtimeFor(dir, { state })).approve(paused.runId, { actor: "ada" });
    expect(again).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxTurns", limit: 6, used: 6 } });
    const events = await state.listEvents(paused.runId);
    expect(events.find((event) => event.type === "budget.extended")?.data).toEqual({ budget: "maxTurns", limit: 6, actor: "ada" });
    const completed = events.filter((event) => event.type === "tool.completed").map((event) => event.data.callId);
    expect(completed).toHaveLength(6);
    expect(new Set(completed).size).toBe(6);

    const denied = await (await runtimeFor(dir, { state })).deny(paused.runId);
    expect(denied.status).toBe("failed");
    expect(denied.error?.code).toBe("AL_ERR_BUDGET_EXCEEDED");
  });

  it("decides only the budget pause a decision was sent for: the same approval sent twice grows the budget once", async () => {
    const state = new InMemoryStateAdapter();
    const runtime = await runtimeFor(agentWith('{ maxTurns: 2, onExceeded: "pause" }'), { state });
    const paused = await runtime.run({ message: "go" });
    expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxTurns", limit: 2 } });

    // A double click: the second approval waits for the first one's drive, which reaches the next pause.
    const twice = await Promise.allSettled([runtime.approve(paused.runId, { actor: "ada" }), runtime.approve(paused.runId, { actor: "ada" })]);
    // Whichever is driven first decides the pause; the other is refused.
    const [decided, refused] = twice[0].status === "fulfilled" ? twice : [twice[1], twice[0]];
    expect(decided).toMatchObject({ status: "fulfilled", value: { status: "waiting_approval", pendingBudget: { budget: "maxTurns", limit: 4, used: 4 } } });
    expect(refused).toMatchObject({ status: "rejected", reason: { code: "AL_ERR_APPROVAL_NOT_FOUND", message: expect.stringContaining("already decided") } });
    expect((await state.listEvents(paused.runId)).filter((event) => event.type === "budget.extended").map((event) => event.data.limit)).toEqual([4]);

    // An approval and a denial sent together for the same pause: whichever is driven first decides it, the other
    // decides nothing (not the pause the approval may have reached).
    const [approved, denied] = await Promise.allSettled([runtime.approve(paused.runId), runtime.deny(paused.runId)]);
    const extended = () => state.listEvents(paused.runId).then((events) => events.filter((event) => event.type === "budget.extended").map((event) => event.data.limit));
    if (approved.status === "fulfilled") {
      expect(approved.value).toMatchObject({ status: "waiting_approval", pendingBudget: { limit: 6 } });
      expect(denied).toMatchObject({ status: "rejected", reason: { code: "AL_ERR_APPROVAL_NOT_FOUND" } });
      expect(await extended()).toEqual([4, 6]);
      expect((await runtime.deny(paused.runId)).status).toBe("failed");
    } else {
      expect(denied).toMatchObject({ status: "fulfilled", value: { status: "failed" } });
      expect(await extended()).toEqual([4]);
    }
  });

  it("refuses a budget that is not a positive number, at build and from the host", async () => {
    await expect(buildAgent(agentWith("{ maxTurns: 0 }"))).rejects.toMatchObject({ code: "AL_ERR_BUDGET_INVALID", message: expect.stringContaining("maxTurns") });
    await expect(buildAgent(agentWith("{ maxTurn: 5 }"))).rejects.toMatchObject({ code: "AL_ERR_BUDGET_INVALID", message: expect.stringContaining('"maxTurn"') });
    await expect(runtimeFor(agentWith(), { budgets: { maxCostUsd: -1 } })).rejects.toMatchObject({ code: "AL_ERR_BUDGET_INVALID" });
    await expect(buildAgent(agentWith('{ onExceeded: "ask" }'))).rejects.toMatchObject({ code: "AL_ERR_BUDGET_INVALID", message: expect.stringContaining("onExceeded") });
  });

  it("names an invalid budget value as it was written: NaN, Infinity, a bigint, a string", async () => {
    // Number(process.env.MAX_TURNS) with the variable unset is NaN: the message must say so, not "null".
    await expect(buildAgent(agentWith("{ maxTurns: Number(process.env.AL_TEST_UNSET_VARIABLE) }"))).rejects.toMatchObject({
      code: "AL_ERR_BUDGET_INVALID",
      message: expect.stringContaining("agent.ts budgets.maxTurns is NaN; it must be a positive number"),
    });
    await expect(buildAgent(agentWith("{ maxCostUsd: Infinity }"))).rejects.toMatchObject({ code: "AL_ERR_BUDGET_INVALID", message: expect.stringContaining("budgets.maxCostUsd is Infinity;") });
    await expect(buildAgent(agentWith("{ maxTurns: 5n }"))).rejects.toMatchObject({ code: "AL_ERR_BUDGET_INVALID", message: expect.stringContaining("budgets.maxTurns is 5n (a bigint);") });
    await expect(buildAgent(agentWith('{ maxTurns: "20" }'))).rejects.toMatchObject({ code: "AL_ERR_BUDGET_INVALID", message: expect.stringContaining('budgets.maxTurns is "20";') });
    await expect(buildAgent(agentWith("{ onExceeded: 1n }"))).rejects.toMatchObject({ code: "AL_ERR_BUDGET_INVALID", message: expect.stringContaining("budgets.onExceeded is 1n (a bigint)") });
    await expect(runtimeFor(agentWith(), { budgets: { maxDurationMs: Number.NaN } })).rejects.toMatchObject({
      code: "AL_ERR_BUDGET_INVALID",
      message: expect.stringContaining("the host's budgets.maxDurationMs is NaN;"),
    });
  });

  it("counts budgets in the revision", async () => {
    const a = await buildAgent(agentWith("{ maxTurns: 5 }"));
    const b = await buildAgent(agentWith("{ maxTurns: 6 }"));
    expect(a.manifest.agentRevision).not.toBe(b.manifest.agentRevision);
  });
});

describe("usage budgets over a failing usage store", () => {
  it("never block a model request: the call goes on, unchecked, and the failure is logged as usage.degraded", async () => {
    const state = new InMemoryStateAdapter();
    state.listUsage = async () => {
      throw new Error("usage store down");
    };
    const warnings: Array<Record<string, unknown>> = [];
    const runtime = await runtimeFor(agentWith("{ maxTokens: 100000, maxConversationTokensPerDay: 100000 }"), {
      state,
      agentHarness: scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "once" } }] }, { text: "done" }] }),
      logger: { ...noopLogger(), warn: (fields: Record<string, unknown>) => void warnings.push(fields) },
    });
    const result = await runtime.run({ message: "go", conversationId: "chat-1" });
    expect(result.status).toBe("completed");
    const degraded = warnings.filter((fields) => fields.event === "usage.degraded");
    expect(degraded.length).toBeGreaterThan(0);
    expect(degraded[0]).toMatchObject({ runId: result.runId, err: expect.stringContaining("usage store down") });
    expect(new Set(degraded.flatMap((fields) => fields.budgets as string[]))).toEqual(new Set(["maxTokens", "maxConversationTokensPerDay"]));
  });
});

describe("cost budgets over a model without prices", () => {
  /** An engine whose model calls spend tokens but cost $0, as a model no catalog prices does. */
  const unpriced: AgentHarness = {
    name: "unpriced",
    async runTurn(_input, ctx) {
      for (let turn = 0; turn < 3; turn++) {
        await ctx.modelCall(`model:${turn}`, async () => {
          await ctx.recordUsage({ id: `${ctx.runId}:model:${turn}`, provider: "local", model: "free", inputTokens: 900, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 });
          return {};
        });
      }
      return { status: "completed", response: { text: "done" } };
    },
  };

  async function warningsOf(budgets: string) {
    const warnings: Array<[Record<string, unknown>, string | undefined]> = [];
    const runtime = await runtimeFor(agentWith(budgets), { agentHarness: unpriced, logger: { ...noopLogger(), warn: (fields: Record<string, unknown>, message?: string) => void warnings.push([fields, message]) } });
    const result = await runtime.run({ message: "go", conversationId: "chat-1" });
    return { result, unpricedWarnings: warnings.filter(([fields]) => fields.event === "budget.unpriced_model") };
  }

  it("warns once that maxCostUsd cannot stop the model's calls, naming the model", async () => {
    const { result, unpricedWarnings } = await warningsOf("{ maxCostUsd: 0.01 }");
    // The budget is never reached: the run goes on, and the user is told why.
    expect(result.status).toBe("completed");
    expect(unpricedWarnings).toHaveLength(1);
    expect(unpricedWarnings[0]![0]).toEqual({ runId: result.runId, event: "budget.unpriced_model", budget: "maxCostUsd", limit: 0.01, model: "local/free" });
    expect(unpricedWarnings[0]![1]).toContain("local/free has no price");
  });

  it("warns for a daily conversation cost budget too, and not when no cost budget is set", async () => {
    const daily = await warningsOf("{ maxConversationCostUsdPerDay: 1 }");
    expect(daily.unpricedWarnings.map(([fields]) => fields.budget)).toEqual(["maxConversationCostUsdPerDay"]);
    expect((await warningsOf("{ maxTokens: 100000 }")).unpricedWarnings).toEqual([]);
  });
});
