import { getEventListeners } from "node:events";
import { definePlugin, type AgentHarness } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, createKernel, scriptedHarness } from "@assemblyline-agents/runtime";
import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

describe("ctx.emit and hooks", () => {
  const hookAgent = (hookBody: string) =>
    agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/note.ts": toolSource({ upFront: true, execute: `await ctx.emit("note.recorded", { note: input.value }); return { ok: true };` }),
      "hooks/audit.ts": `import { defineHook } from "@assemblyline-agents/core";
globalThis.__hookSeen = [];
export default defineHook({ events: { ${hookBody} } });
`,
    });

  it("records custom events durably and lets hooks see each event once, after it is recorded, in order", async () => {
    const dir = hookAgent(`"*"(event) { globalThis.__hookSeen.push(event.type + "#" + event.seq); },
      "note.recorded"(event, ctx) { globalThis.__hookSeen.push("note:" + event.data.note + ":" + ctx.agent.id + ":" + (ctx.runId === event.runId)); }`);
    const { runtime, events } = await startAgent(dir, [{ toolCalls: [{ name: "note", input: { value: "milk" } }] }, { text: "ok" }]);
    const result = await runtime.run({ message: "go" });
    const recorded = await events(result.runId);
    const seen = (globalThis as unknown as { __hookSeen: string[] }).__hookSeen;
    expect(seen.filter((entry) => entry.includes("#"))).toEqual(recorded.map((event) => `${event.type}#${event.seq}`));
    expect(seen.filter((entry) => entry.startsWith("note:"))).toHaveLength(1);
    expect(seen.find((entry) => entry.startsWith("note:"))).toMatch(/^note:milk:.+:true$/);
    const custom = recorded.find((event) => event.type === "note.recorded")!;
    expect(custom.data).toMatchObject({ note: "milk", toolCallId: "call_0_0" });
    expect(recorded.map((event) => event.seq)).toEqual(recorded.map((_, index) => index + 1));
  });

  it("logs a throwing handler as hook.failed and lets the run go on", async () => {
    const dir = hookAgent(`"tool.completed"() { throw new Error("audit db offline"); }`);
    const { runtime, events } = await startAgent(dir, [{ toolCalls: [{ name: "note", input: { value: "a" } }] }, { text: "ok" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const failed = (await events(result.runId)).filter((event) => event.type === "hook.failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]!.data).toMatchObject({ hook: "hooks/audit.ts", eventType: "tool.completed", error: "audit db offline" });
  });

  it("counts a handler that does not finish in time as failed and lets the run go on without it", async () => {
    const dir = hookAgent(`"tool.completed"() { return new Promise(() => {}); }`);
    const { runtime, events } = await startAgent(dir, [{ toolCalls: [{ name: "note", input: { value: "a" } }] }, { text: "ok" }], { hookTimeoutMs: 50 });
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const failed = (await events(result.runId)).filter((event) => event.type === "hook.failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]!.data).toMatchObject({ hook: "hooks/audit.ts", eventType: "tool.completed", error: expect.stringContaining("did not finish within 50 ms") });
    await expect(startAgent(dir, [], { hookTimeoutMs: 0 })).rejects.toThrow(/hookTimeoutMs is 0/);
    // Longer than a timer waits: it would fire at once and cut every hook short.
    await expect(startAgent(dir, [], { hookTimeoutMs: 3e9 })).rejects.toThrow(/hookTimeoutMs is 3000000000; give a whole number of milliseconds from 1 to 2147483647/);
  });

  it("refuses a lease TTL a heartbeat timer cannot wait for", async () => {
    for (const leaseTtlMs of [0, 2.5, 3e9, Number.POSITIVE_INFINITY]) {
      await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { leaseTtlMs }), String(leaseTtlMs)).rejects.toThrow(/leaseTtlMs is .*; give a whole number of milliseconds from 1 to 2147483647/);
    }
  });

  it("refuses run slots and queue places that are not whole numbers, and no run slot at all (every run would wait for good)", async () => {
    for (const maxConcurrentRuns of [0, 1.5, -1, Number.NaN]) {
      await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { maxConcurrentRuns }), String(maxConcurrentRuns)).rejects.toThrow(/maxConcurrentRuns is .*; give a whole number, 1 or more/);
    }
    for (const maxQueuedRuns of [-3, 0.5]) {
      await expect(startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { maxQueuedRuns }), String(maxQueuedRuns)).rejects.toThrow(/maxQueuedRuns is .*; give a whole number, 0 or more/);
    }
    const { runtime } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "ok" }], { maxConcurrentRuns: 1, maxQueuedRuns: 0 });
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
  });

  it("refuses ctx.emit of a runtime event type", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/forge.ts": toolSource({ upFront: true, execute: `await ctx.emit("run.completed", {}); return {};` }) });
    const { runtime } = await startAgent(dir, [{ toolCalls: [{ name: "forge", input: { value: "a" } }] }, { text: "never" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error?.message).toMatch(/reserved/);
  });

  // A run reads some of its own events back: a budget.extended would raise the run's limits.
  for (const type of ["budget.extended", "skill.loaded", "subagent.started", "skill.used_by_me"]) {
    it(`refuses ctx.emit("${type}"), an event in the runtime's namespace, and records none`, async () => {
      const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/forge.ts": toolSource({ upFront: true, execute: `await ctx.emit(${JSON.stringify(type)}, { budget: "maxToolCalls", limit: 100, name: "x" }); return {};` }) });
      const { runtime, events } = await startAgent(dir, [{ toolCalls: [{ name: "forge", input: { value: "a" } }] }, { text: "never" }]);
      const result = await runtime.run({ message: "go" });
      expect(result.status).toBe("failed");
      expect(result.error).toMatchObject({ code: "AL_ERR_EVENT_TYPE_RESERVED" });
      expect((await events(result.runId)).map((event) => event.type)).not.toContain(type);
    });
  }

  it("records a tool's own event type", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/audit.ts": toolSource({ upFront: true, execute: `await ctx.emit("audit.write_requested", { path: "/memory/a.md" }); return {};` }) });
    const { runtime, events } = await startAgent(dir, [{ toolCalls: [{ name: "audit", input: { value: "a" } }] }, { text: "done" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    expect((await events(result.runId)).find((event) => event.type === "audit.write_requested")?.data).toMatchObject({ path: "/memory/a.md" });
  });
});

describe("resolvers.ts", () => {
  const resolverAgent = (body: string) =>
    agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/authored", instructions: "Authored identity." });`,
      "tools/alpha.ts": toolSource({ upFront: true }),
      "tools/beta.ts": toolSource({ upFront: true }),
      "resolvers.ts": `import { defineRunResolver } from "@assemblyline-agents/core";
export default defineRunResolver(async (ctx) => { ${body} });`,
    });

  it("records the declaration as run.capabilities_resolved before applying model, instructions and defaultTools", async () => {
    const dir = resolverAgent(`if (ctx.metadata?.tier === "trial") return { model: "test/trial", instructions: "Trial plan.", defaultTools: ["alpha", "ask_question"] }; return null;`);
    const { runtime, log, types, events } = await startAgent(dir, [{ text: "hi" }, { text: "hi" }]);
    const trial = await runtime.run({ message: "go", metadata: { tier: "trial" } });
    const order = await types(trial.runId);
    expect(order.indexOf("run.capabilities_resolved")).toBeLessThan(order.indexOf("run.started"));
    const resolved = (await events(trial.runId)).find((event) => event.type === "run.capabilities_resolved")!;
    expect(resolved.data.declaration).toEqual({ model: "test/trial", instructions: "Trial plan.", defaultTools: ["alpha", "ask_question"] });
    expect(log.modelSpecs[0]).toBe("test/trial");
    expect(log.contexts[0]!.instructions).toMatch(/^Authored identity\.\n\nTrial plan\./);
    expect(log.contexts[0]!.tools.map((tool) => tool.name).sort()).toEqual(["alpha", "ask_question"]);

    const regular = await runtime.run({ message: "go" });
    expect((await events(regular.runId)).find((event) => event.type === "run.capabilities_resolved")!.data.declaration).toBeNull();
    expect(log.modelSpecs[1]).toBe("test/authored");
    expect(log.contexts[1]!.tools.map((tool) => tool.name).sort()).toEqual(["alpha", "ask_question", "beta", "delete", "edit", "grep", "list", "read", "write"]);
  });

  it("lets a host-forced model win over the resolver", async () => {
    const dir = resolverAgent(`return { model: "test/resolved" };`);
    const { runtime, log } = await startAgent(dir, [{ text: "hi" }]);
    await runtime.run({ message: "go", model: "test/forced" });
    expect(log.modelSpecs).toEqual(["test/forced"]);
  });

  it("lets a host-forced model win over the resolver in a run submitted and started later, even the agent's own model", async () => {
    const dir = resolverAgent(`return { model: "test/resolved" };`);
    const { runtime, log, events } = await startAgent(dir, [{ text: "one" }, { text: "two" }]);
    for (const model of ["test/forced", "test/authored"]) {
      const { runId } = await runtime.submit({ message: "go", model });
      await runtime.start(runId);
      expect((await events(runId)).find((event) => event.type === "run.capabilities_resolved")!.data.forcedModel).toBe(model);
    }
    expect(log.modelSpecs).toEqual(["test/forced", "test/authored"]);
  });

  it("fails the run when the resolver throws", async () => {
    const dir = resolverAgent(`throw new Error("tenant lookup failed");`);
    const { runtime, log, types } = await startAgent(dir, [{ text: "never" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "AL_ERR_RESOLVER_FAILED" });
    expect(result.error?.message).toContain("tenant lookup failed");
    expect(log.modelCalls).toBe(0);
    expect(await types(result.runId)).toEqual(["run.created", "run.failed"]);
  });

  it("fails the run saying what the resolver threw when it throws something other than an Error", async () => {
    for (const [thrown, said] of [[`"tier lookup failed"`, "tier lookup failed"], ["null", "null"], ["undefined", "undefined"]] as const) {
      const { runtime, log, types } = await startAgent(resolverAgent(`throw ${thrown};`), [{ text: "never" }]);
      const result = await runtime.run({ message: "go" });
      expect(result.status).toBe("failed");
      expect(result.error).toMatchObject({ code: "AL_ERR_RESOLVER_FAILED", message: expect.stringContaining(`resolvers.ts threw for run ${result.runId}: ${said}`) });
      expect(log.modelCalls).toBe(0);
      expect(await types(result.runId)).toEqual(["run.created", "run.failed"]);
    }
  });

  it("names the plugin's resolveRun tap, not resolvers.ts, when the tap throws", async () => {
    const tiers = definePlugin({
      name: "tiers",
      version: "1.2.0",
      apply(kernel) {
        kernel.hooks.resolveRun.tapPromise("tier-lookup", async () => {
          throw "tier service unreachable";
        });
      },
    });
    const { runtime, log } = await startAgent(resolverAgent(`return null;`), [{ text: "never" }], { kernel: await createKernel({ plugins: [tiers] }) });
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("AL_ERR_RESOLVER_FAILED");
    expect(result.error?.message).toContain(`a plugin's resolveRun tap threw for run ${result.runId}: hooks.resolveRun tap "tier-lookup" of plugin tiers@1.2.0 threw: tier service unreachable`);
    expect(result.error?.message).not.toContain("resolvers.ts threw");
    expect(log.modelCalls).toBe(0);
  });

  it("fails the run, releasing its lease, when the resolver never settles (resolverTimeoutMs)", async () => {
    const dir = resolverAgent(`await new Promise(() => {});`);
    const { runtime, log, state, types } = await startAgent(dir, [{ text: "never" }], { resolverTimeoutMs: 200 });
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "AL_ERR_RESOLVER_FAILED" });
    expect(result.error?.message).toContain("did not settle within 200 ms (RuntimeOptions.resolverTimeoutMs)");
    expect(log.modelCalls).toBe(0);
    expect(await types(result.runId)).toEqual(["run.created", "run.failed"]);
    expect((await state.getRun(result.runId))?.lease).toBeNull();
  });

  it("refuses a resolverTimeoutMs that is not a whole number of milliseconds from 1", async () => {
    for (const resolverTimeoutMs of [0, -1, 1.5, Number.POSITIVE_INFINITY]) {
      await expect(startAgent(resolverAgent(`return null;`), [], { resolverTimeoutMs })).rejects.toThrow(/resolverTimeoutMs is .*; give a whole number of milliseconds/);
    }
  });

  it.each([
    [`return { defaultTool: ["alpha"] };`, /unknown field defaultTool/],
    [`return { model: 42 };`, /model is 42, not a model name/],
    [`return { model: "" };`, /model is "", not a model name/],
    [`return { instructions: 5 };`, /instructions is 5, not a string/],
    [`return { defaultTools: "alpha" };`, /defaultTools is "alpha", not an array of tool names/],
    [`return "gpt";`, /it returned "gpt", not \{ model\?, instructions\?, defaultTools\? \} or null/],
  ])("fails the run, before any model call, when the resolver returns what it cannot mean: %s", async (body, message) => {
    const { runtime, log } = await startAgent(resolverAgent(body), [{ text: "never" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "AL_ERR_RESOLVER_FAILED" });
    expect(result.error?.message).toMatch(message);
    expect(log.modelCalls).toBe(0);
  });
});

describe("context policy", () => {
  it("bounds recent history with defaultContext({ recentHistory: { maxMessages } })", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defaultContext, defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/m", context: defaultContext({ recentHistory: { maxMessages: 2 } }) });`,
    });
    const { runtime, log } = await startAgent(dir, [{ text: "r1" }, { text: "r2" }, { text: "r3" }]);
    for (const message of ["m1", "m2", "m3"]) {
      // Each run is its own probe script step 0, so reuse the same reply list per run.
      await runtime.run({ message, conversationId: "conv-1" });
    }
    const last = log.contexts.at(-1)!;
    expect(last.messages).toEqual([
      { role: "user", content: "m2" },
      { role: "assistant", content: "r1" },
      { role: "user", content: "m3" },
    ]);
  });

  it("applies a context.ts policy that extends the default", async () => {
    const dir = agentFolder({
      "context.ts": `import { defaultContext, defineContext } from "@assemblyline-agents/core";
export const customContext = defineContext({
  kind: "custom", name: "customContext",
  extends: defaultContext({ recentHistory: { maxMessages: 0 } }),
  options: { includeProjectMarker: true },
  build(context, info) { return { ...context, instructions: context.instructions + (info.options.includeProjectMarker ? "\\nPROJECT-MARKER" : "") }; },
});`,
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
import { customContext } from "./context";
export default defineAgent({ model: "test/m", instructions: "Base.", context: customContext });`,
    });
    const { runtime, log, bundle } = await startAgent(dir, [{ text: "a" }, { text: "b" }]);
    await runtime.run({ message: "one", conversationId: "c" });
    await runtime.run({ message: "two", conversationId: "c" });
    expect(log.contexts[1]!.instructions).toMatch(/^Base\.[\s\S]*PROJECT-MARKER$/);
    expect(log.contexts[1]!.messages).toEqual([{ role: "user", content: "two" }]);
    expect(bundle.manifest.context).toMatchObject({ file: "context.ts" });
    expect(bundle.manifest.agent.context).toMatchObject({ kind: "custom", name: "customContext", hasBuild: true });
  });
});

describe("observers after a crash", () => {
  it("delivers a finished run's events that no observer saw, once, when the runtime recovers", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "hooks/count.ts": `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { "run.completed"(event) { (globalThis.__completedSeen ??= []).push(event.runId); } } });`,
    });
    const first = await startAgent(dir, [{ text: "done" }]);
    const result = await first.runtime.run({ message: "go" });
    const seen = () => (globalThis as { __completedSeen?: string[] }).__completedSeen;
    expect(seen()).toEqual([result.runId]);
    (globalThis as { __completedSeen?: string[] }).__completedSeen = [];
    // What a process that died between recording a run's end and running the observers leaves.
    const agentId = first.bundle.manifest.agent.id;
    const orphan = async (status: "completed" | "waiting_approval", lease?: { owner: string; ttlMs: number }) => {
      const { run } = await first.state.createRun({ id: `run_orphan_${status}_${lease ? "leased" : "free"}`, agentId, agentRevision: first.bundle.manifest.agentRevision, conversationId: null, modelSpec: "test/m", input: { message: "go", metadata: {} } }, lease ? { lease } : {});
      await first.state.appendEvents(run.id, [{ type: status === "completed" ? "run.completed" : "run.waiting_approval", data: {} }], { run: { status } });
      return run.id;
    };
    const finished = await orphan("completed");
    const paused = await orphan("waiting_approval");
    // A run whose holder's lease is live is the holder's to deliver.
    const held = await orphan("completed", { owner: "alive", ttlMs: 60_000 });
    // Runs of another agent in the same store are its own host's business.
    await first.state.createRun({ id: "run_other_agent", agentId: "someone-else", agentRevision: "rev_x", conversationId: null, modelSpec: "test/m", input: { message: "go", metadata: {} } });
    await first.state.appendEvents("run_other_agent", [{ type: "run.completed", data: {} }], { run: { status: "completed" } });

    const second = await startAgent(dir, [{ text: "done" }], { state: first.state });
    expect(await second.runtime.catchUpObservers()).toBe(2);
    expect(seen()).toEqual([finished]);
    for (const runId of [finished, paused]) expect((await first.state.getRun(runId))!.observedSeq).toBe(2);
    expect((await first.state.getRun(held))!.observedSeq).toBe(0);
    expect((await first.state.getRun("run_other_agent"))!.observedSeq).toBe(0);
    expect(await second.runtime.catchUpObservers()).toBe(0);
    expect(seen()).toEqual([finished]);
  });

  it("delivers the events of a subagent's run no observer saw, as it does the agent's own", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Researches things." });
`,
      "hooks/count.ts": `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { "run.completed"(event) { (globalThis.__subagentSeen ??= []).push(event.runId); } } });`,
    });
    const first = await startAgent(dir, [{ text: "done" }]);
    // A subagent's run whose end a process recorded and died before its observers ran.
    const { run } = await first.state.createRun({ id: "run_sub_orphan", agentId: `${first.bundle.manifest.agent.id}/researcher`, agentRevision: first.bundle.manifest.agentRevision, conversationId: null, modelSpec: "test/m", input: { message: "look", metadata: {}, parent: { runId: "run_parent", callId: "call_1", subagent: "researcher", depth: 1, sandboxRunId: "run_sub_orphan" } } });
    await first.state.appendEvents(run.id, [{ type: "run.completed", data: {} }], { run: { status: "completed" } });
    (globalThis as { __subagentSeen?: string[] }).__subagentSeen = [];
    expect(await first.runtime.catchUpObservers()).toBe(1);
    expect((globalThis as { __subagentSeen?: string[] }).__subagentSeen).toEqual(["run_sub_orphan"]);
    expect(await first.runtime.catchUpObservers({ everyRun: true })).toBe(0);
  });

  it("catches up the newest resting runs by default, and every run behind when asked", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "hooks/count.ts": `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { "run.completed"(event) { (globalThis.__lateSeen ??= []).push(event.runId); } } });`,
    });
    const first = await startAgent(dir, Array.from({ length: 120 }, () => ({ text: "done" })));
    const agentId = first.bundle.manifest.agent.id;
    const behind: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const { run } = await first.state.createRun({ id: `run_behind_${index}`, agentId, agentRevision: first.bundle.manifest.agentRevision, conversationId: null, modelSpec: "test/m", input: { message: "go", metadata: {} } });
      await first.state.appendEvents(run.id, [{ type: "run.completed", data: {} }], { run: { status: "completed" } });
      behind.push(run.id);
    }
    // 60 newer runs whose observers saw everything: the behind ones are past the newest 50.
    for (let index = 0; index < 60; index += 1) await first.runtime.run({ message: `newer ${index}` });
    (globalThis as { __lateSeen?: string[] }).__lateSeen = [];
    expect(await first.runtime.catchUpObservers({ limit: 50 })).toBe(0);
    expect(await first.runtime.catchUpObservers()).toBe(3);
    expect([...(globalThis as { __lateSeen?: string[] }).__lateSeen!].sort()).toEqual(behind);

    // Past the newest runs, found when asked for every run.
    const { run } = await first.state.createRun({ id: "run_behind_old", agentId, agentRevision: first.bundle.manifest.agentRevision, conversationId: null, modelSpec: "test/m", input: { message: "go", metadata: {} } });
    await first.state.appendEvents(run.id, [{ type: "run.completed", data: {} }], { run: { status: "completed" } });
    for (let index = 0; index < 60; index += 1) await first.runtime.run({ message: `newest ${index}` });
    expect(await first.runtime.catchUpObservers({ limit: 50 })).toBe(0);
    expect(await first.runtime.catchUpObservers({ everyRun: true })).toBe(1);
    expect((globalThis as { __lateSeen?: string[] }).__lateSeen).toContain("run_behind_old");
  });
});

describe("the caller's abort signal", () => {
  it("aborts the engine of the run it was given to, and holds no listener once runs end", async () => {
    const engineSignals: AbortSignal[] = [];
    const harness: AgentHarness = {
      name: "waits-for-abort",
      async runTurn(input, ctx) {
        engineSignals.push(ctx.signal);
        if (input.context.messages.some((message) => JSON.stringify(message).includes("wait"))) {
          await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
          throw ctx.signal.reason;
        }
        return { status: "completed", response: { text: "ok" } };
      },
    };
    const { runtime } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { agentHarness: harness });
    const shared = new AbortController();
    for (let run = 0; run < 20; run += 1) expect((await runtime.run({ message: "quick", signal: shared.signal })).status).toBe("completed");
    // One signal for many runs: each run's listener went with it.
    expect(getEventListeners(shared.signal, "abort")).toHaveLength(0);

    const waiting = runtime.run({ message: "wait", signal: shared.signal });
    await expect.poll(() => engineSignals.length).toBe(21);
    shared.abort(new Error("caller gave up"));
    expect((await waiting).status).toBe("failed");
    expect(engineSignals[20]!.aborted).toBe(true);
  });

  it("refuses the tool calls an engine makes after the run's signal aborted, with the abort's reason", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/note.ts": toolSource({ upFront: true, execute: `globalThis.__notes = (globalThis.__notes ?? 0) + 1; globalThis.__cancel?.abort(new Error("cancelled mid-reply")); return { ok: true };` }),
    });
    const cancel = new AbortController();
    (globalThis as { __cancel?: AbortController; __notes?: number }).__cancel = cancel;
    (globalThis as { __notes?: number }).__notes = 0;
    const refusals: unknown[] = [];
    // An engine that answers every call of a reply, never looking at its signal.
    const heedless: AgentHarness = {
      name: "heedless",
      async runTurn(_input, ctx) {
        for (const id of ["call_a", "call_b"]) await ctx.callTool({ id, name: "note", input: { value: id } }).catch((error: unknown) => refusals.push(error));
        return { status: "completed", response: { text: "noted" } };
      },
    };
    const { runtime } = await startAgent(dir, [], { agentHarness: heedless });

    await runtime.run({ message: "note twice", signal: cancel.signal });
    (globalThis as { __cancel?: AbortController }).__cancel = undefined;

    expect((globalThis as { __notes?: number }).__notes).toBe(1);
    expect(refusals).toEqual([new Error("cancelled mid-reply")]);
  });
  it("makes no further model call once the caller cancels while a tool runs, and fails the run with the abort's reason", async () => {
    // A tool that finishes its work (it does not watch ctx.signal) a little after the caller cancels.
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true, execute: `await new Promise((resolve) => setTimeout(resolve, 300)); return { ok: true };` }) });
    const engine = scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "x" } }] }, { text: "All done." }] });
    const { runtime, types } = await startAgent(dir, [], { agentHarness: engine });
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(new Error("cancelled by the caller")), 100);

    const result = await runtime.run({ message: "go", signal: cancel.signal, channel: { name: "web" } });

    expect(result).toMatchObject({ status: "failed", error: { message: "cancelled by the caller" } });
    const recorded = await types(result.runId);
    expect(recorded.filter((type) => type === "model.response")).toHaveLength(1);
    expect(recorded).not.toContain("run.completed");
  });

  it("stops waiting for a tool that never returns once the caller cancels, and fails the run with the abort's reason", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true, execute: `await new Promise(() => {}); return { ok: true };` }) });
    const engine = scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "x" } }] }, { text: "done" }] });
    const { runtime, state } = await startAgent(dir, [], { agentHarness: engine });
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(new Error("cancelled by the caller")), 200);

    const outcome = await Promise.race([runtime.run({ message: "go", signal: cancel.signal }), new Promise((resolve) => setTimeout(() => resolve("still running 3 s after the cancel"), 3000))]);

    expect(outcome).toMatchObject({ status: "failed", error: { message: "cancelled by the caller" } });
    const { runId } = outcome as { runId: string };
    expect(await state.getToolCall(runId, "call_0_0")).toMatchObject({ status: "failed", error: "tool echo was stopped before it returned: cancelled by the caller" });
    // Its slot is free again: another run starts at once.
    expect(runtime.runLoad()).toEqual({ executing: 0, waiting: 0 });
  }, 10_000);

  it("fails the run with the abort's reason when its engine swallows the cancel and reports the turn completed", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/note.ts": toolSource({ upFront: true, execute: `globalThis.__cancel?.abort(new Error("cancelled mid-reply")); return { ok: true };` }),
    });
    const cancel = new AbortController();
    (globalThis as { __cancel?: AbortController }).__cancel = cancel;
    const swallower: AgentHarness = {
      name: "swallower",
      async runTurn(_input, ctx) {
        await ctx.callTool({ id: "call_a", name: "note", input: { value: "a" } });
        await ctx.modelCall("model:1", async () => ({ text: "more" })).catch(() => undefined);
        return { status: "completed", response: { text: "done anyway" } };
      },
    };
    const { runtime, types } = await startAgent(dir, [], { agentHarness: swallower });

    const result = await runtime.run({ message: "go", signal: cancel.signal });
    (globalThis as { __cancel?: AbortController }).__cancel = undefined;

    expect(result).toMatchObject({ status: "failed", error: { message: "cancelled mid-reply" } });
    expect(await types(result.runId)).not.toContain("run.completed");
  });
});

describe("a run cancelled before its turn", () => {
  const probe = (seen: boolean[]): AgentHarness => ({
    name: "abort-probe",
    async runTurn(_input, ctx) {
      seen.push(ctx.signal.aborted);
      ctx.signal.throwIfAborted();
      return { status: "completed", response: { text: "ran" } };
    },
  });

  it("fails a run whose signal was aborted when it was given, resolving nothing and starting no engine", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "resolvers.ts": `import { defineRunResolver } from "@assemblyline-agents/core";
export default defineRunResolver(async () => { globalThis.__resolved = true; return null; });`,
    });
    const seen: boolean[] = [];
    (globalThis as { __resolved?: boolean }).__resolved = false;
    const { runtime, types } = await startAgent(dir, [], { agentHarness: probe(seen) });

    const result = await runtime.run({ message: "hi", signal: AbortSignal.abort(new Error("cancelled by the caller")) });

    expect(result).toMatchObject({ status: "failed", error: { message: "cancelled by the caller" } });
    expect(seen).toEqual([]);
    expect((globalThis as { __resolved?: boolean }).__resolved).toBe(false);
    expect(await types(result.runId)).toEqual(["run.created", "run.failed"]);
  });

  it("gives the engine an aborted signal when the caller cancels while the resolver runs", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "resolvers.ts": `import { defineRunResolver } from "@assemblyline-agents/core";
export default defineRunResolver(async () => { globalThis.__cancel?.abort(new Error("cancelled while resolving")); return null; });`,
    });
    const seen: boolean[] = [];
    const cancel = new AbortController();
    (globalThis as { __cancel?: AbortController }).__cancel = cancel;
    const { runtime } = await startAgent(dir, [], { agentHarness: probe(seen) });

    const result = await runtime.run({ message: "hi", signal: cancel.signal });
    (globalThis as { __cancel?: AbortController }).__cancel = undefined;

    expect(seen).toEqual([true]);
    expect(result).toMatchObject({ status: "failed", error: { message: "cancelled while resolving" } });
  });
});

describe("a lease lost mid-turn", () => {
  it("aborts the engine's signal with AL_ERR_RUN_LEASE_LOST once another replica holds the run", async () => {
    const state = new InMemoryStateAdapter();
    const engineSignals: AbortSignal[] = [];
    const harness: AgentHarness = {
      name: "waits-for-abort",
      async runTurn(_input, ctx) {
        engineSignals.push(ctx.signal);
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
        throw ctx.signal.reason;
      },
    };
    // A 300 ms lease: the drive's heartbeat renews it every 100 ms, and finds it gone after the takeover.
    const { runtime } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { agentHarness: harness, state, leaseTtlMs: 300 });
    // Settled at once: the run's own promise rejects while the test waits below.
    const outcome = runtime.run({ message: "wait" }).then((result) => result, (error: unknown) => error);
    await expect.poll(() => engineSignals.length).toBe(1);
    const [run] = (await state.listRuns()).runs;
    // Another replica takes the run as if the lease had expired (its clock a minute on).
    expect(await state.acquireRunLease(run!.id, "replica-b", 60_000, new Date(Date.now() + 60_000))).toMatchObject({ owner: "replica-b" });
    await expect.poll(() => engineSignals[0]!.aborted, { timeout: 3_000 }).toBe(true);
    expect(engineSignals[0]!.reason).toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });
    // This process stops: it neither finishes the run nor writes to it under the other's lease.
    expect(await outcome).toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });
    const after = await state.getRun(run!.id);
    expect(after).toMatchObject({ lease: { owner: "replica-b" } });
    expect(["queued", "running"]).toContain(after!.status);
  });
});
