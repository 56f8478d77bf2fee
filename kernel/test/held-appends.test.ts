import { afterEach, describe, expect, it } from "vitest";
import type { AgentHarness } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { createKernelHooks } from "../src/hooks.js";
import { RunJournal } from "../src/run/journal.js";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { CrashOnceBefore } from "./support/crash-once-state.js";
import { startAgent } from "./support/runtime.js";

/** The tool below calls this while it executes: the test reads the store at that moment. */
const PROBE = "__heldAppendsProbe";
type Probe = () => Promise<void>;
const probeSlot = globalThis as unknown as Record<string, Probe | undefined>;

const probingTool = toolSource({ upFront: true, execute: `await globalThis.${PROBE}?.(); return { echoed: input.value };` });
const script = () => scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "x" } }] }, { text: "done" }] });

afterEach(() => {
  delete probeSlot[PROBE];
});

describe("held appends", () => {
  it("commit the run's start and the model call's result before the tool the model asked for executes", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": probingTool });
    const { runtime, state } = await startAgent(dir, [], { agentHarness: script() });
    const seen: { types: string[]; status: string; step: boolean }[] = [];
    probeSlot[PROBE] = async () => {
      const [run] = (await state.listRuns()).runs;
      seen.push({
        types: (await state.listEvents(run!.id)).map((event) => event.type),
        status: run!.status,
        step: (await state.getStep(run!.id, "harness:model:0")) !== undefined,
      });
    };
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    expect(seen).toEqual([
      {
        types: ["run.created", "run.capabilities_resolved", "run.started", "model.response", "durable_step.completed", "tool.called"],
        status: "running",
        step: true,
      },
    ]);
  });

  it("are done again, once, when the process dies before the append that commits them", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": probingTool });
    const state = new CrashOnceBefore("tool.called");
    const { runtime, events } = await startAgent(dir, [], { state, agentHarness: script() });
    let executions = 0;
    probeSlot[PROBE] = async () => {
      executions += 1;
    };
    await expect(runtime.run({ message: "go" })).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    const [run] = (await state.listRuns()).runs;
    // Nothing the drive held reached the store, and the tool never ran on it.
    expect((await events(run!.id)).map((event) => event.type)).toEqual(["run.created"]);
    expect(executions).toBe(0);

    expect((await runtime.resume(run!.id)).status).toBe("completed");
    const recorded = await events(run!.id);
    expect(recorded.filter((event) => event.type === "run.started")).toHaveLength(1);
    expect(recorded.filter((event) => event.type === "model.response").map((event) => event.data.turn)).toEqual([0, 1]);
    expect(executions).toBe(1);
  });
});

describe("events an engine emits inside a model call", () => {
  /** Each run's model call waits for its gate, emits, and fails when the run's message says so. */
  const gatedHarness = () => {
    const gates = new Map<string, () => void>();
    const entered: string[] = [];
    const harness: AgentHarness = {
      name: "gated",
      async runTurn(input, ctx) {
        const text = await ctx.modelCall("model:0", async () => {
          entered.push(input.runId);
          await new Promise<void>((resolve) => gates.set(input.runId, resolve));
          await ctx.emit("probe.emitted", { runId: input.runId });
          if (input.context.messages.some((message) => JSON.stringify(message).includes("fail"))) throw new Error("model call failed after emitting");
          return "ok";
        });
        return { status: "completed", response: { text } };
      },
    };
    return { harness, gates, entered };
  };

  it("stay with their own call while another run's call ends first: a call that fails after emitting records none", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT });
    const { harness, gates, entered } = gatedHarness();
    const { runtime, events } = await startAgent(dir, [], { agentHarness: harness });
    const first = runtime.run({ message: "succeed" });
    const second = runtime.run({ message: "fail" });
    await expect.poll(() => entered.length).toBe(2);
    const [firstId, secondId] = entered as [string, string];
    // The first call ends while the second is still inside its body.
    gates.get(firstId)!();
    expect((await first).status).toBe("completed");
    gates.get(secondId)!();
    expect((await second).status).toBe("failed");
    expect((await events(firstId)).filter((event) => event.type === "probe.emitted")).toHaveLength(1);
    // Held for a step that never completed: dropped with it, never recorded on its own.
    expect((await events(secondId)).filter((event) => event.type === "probe.emitted")).toEqual([]);
  });
});

describe("a model call's result", () => {
  it("is the engine's own copy: changing it before the held step is written changes nothing stored", async () => {
    const harness: AgentHarness = {
      name: "mutates-its-reply",
      async runTurn(_input, ctx) {
        const reply = await ctx.modelCall("model:0", async () => ({ items: ["said"] }));
        reply.items.push("changed afterwards");
        return { status: "completed", response: { text: reply.items.join(", ") } };
      },
    };
    const { runtime, state } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { agentHarness: harness });
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    expect((await state.getStep(result.runId, "harness:model:0"))?.result).toEqual({ items: ["said"] });
  });
});

describe("RunJournal.hold", () => {
  const journalOver = (state: InMemoryStateAdapter) => {
    const hooks = createKernelHooks();
    const observed: number[] = [];
    hooks.event.tap("test", (event) => {
      observed.push(event.seq);
    });
    return { journal: new RunJournal(state, hooks, {} as never, noopLogger()), observed };
  };
  const step = (runId: string, key: string) => ({ step: { runId, key, result: key, metadata: {}, createdAt: new Date().toISOString() } });

  it("commits held events with the next append, in order, and observers see each once after it commits", async () => {
    const state = new InMemoryStateAdapter();
    const { run } = await state.createRun({ id: "run_held", agentId: "a", agentRevision: "r", modelSpec: "m", input: { message: "go", metadata: {} } });
    const { journal, observed } = journalOver(state);
    await journal.observe(run.id);
    await journal.hold(run.id, [{ type: "first", data: {} }], { run: { status: "running" } });
    expect(await state.listEvents(run.id)).toHaveLength(1);
    expect(observed).toEqual([1]);
    const own = await journal.append(run.id, [{ type: "second", data: {} }], step(run.id, "s1"));
    // The caller gets its own events back; the held one went first in the same write.
    expect(own.map((event) => [event.seq, event.type])).toEqual([[3, "second"]]);
    expect((await state.listEvents(run.id)).map((event) => event.type)).toEqual(["run.created", "first", "second"]);
    expect((await state.getRun(run.id))!.status).toBe("running");
    expect(await state.getStep(run.id, "s1")).toBeDefined();
    expect(observed).toEqual([1, 2, 3]);
  });

  it("writes a held change first, on its own, when the next one changes the same record, and keeps expectedLastSeq meaning the store as the caller saw it", async () => {
    const state = new InMemoryStateAdapter();
    const { run } = await state.createRun({ id: "run_conflict", agentId: "a", agentRevision: "r", modelSpec: "m", input: { message: "go", metadata: {} } });
    const { journal, observed } = journalOver(state);
    await journal.observe(run.id);
    await journal.hold(run.id, [{ type: "first", data: {} }], step(run.id, "s1"));
    await journal.hold(run.id, [{ type: "second", data: {} }], step(run.id, "s2"));
    // Two steps cannot share an append: the first was written when the second was held.
    expect((await state.listEvents(run.id)).map((event) => event.type)).toEqual(["run.created", "first"]);
    await journal.append(run.id, [{ type: "third", data: {} }], step(run.id, "s3"), { expectedLastSeq: 2 });
    expect((await state.listEvents(run.id)).map((event) => event.type)).toEqual(["run.created", "first", "second", "third"]);
    expect((await state.getStep(run.id, "s2"))?.result).toBe("s2");
    expect((await state.getStep(run.id, "s3"))?.result).toBe("s3");
    expect(observed).toEqual([1, 2, 3, 4]);
  });

  it("drops what it holds when the drive ends without another append", async () => {
    const state = new InMemoryStateAdapter();
    const { run } = await state.createRun({ id: "run_dropped", agentId: "a", agentRevision: "r", modelSpec: "m", input: { message: "go", metadata: {} } });
    const { journal } = journalOver(state);
    await journal.hold(run.id, [{ type: "held", data: {} }]);
    await journal.forget(run.id);
    await journal.append(run.id, [{ type: "next drive", data: {} }]);
    expect((await state.listEvents(run.id)).map((event) => event.type)).toEqual(["run.created", "next drive"]);
  });
});
