import { describe, expect, it } from "vitest";
import type { CreateRunOptions, CreatedRun, NewRun } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, scriptedHarness } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/** Every run-store call the runtime makes, by method name. */
function counted<T extends InMemoryStateAdapter>(state: T): { state: T; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(state, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(String(property));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { state: proxy, calls };
}

/** An adapter written before createRun could lease: it ignores the option. */
class LeaselessCreate extends InMemoryStateAdapter {
  override createRun(run: NewRun, _options?: CreateRunOptions): Promise<CreatedRun> {
    return super.createRun(run);
  }
}

const agent = () => agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true }) });
const script = () => scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "a" } }] }, { toolCalls: [{ name: "echo", input: { value: "b" } }] }, { text: "done" }] });

describe("a fresh run's writes", () => {
  it("create the run leased, read none of it back, and release the lease with the observers' position", async () => {
    const { state, calls } = counted(new InMemoryStateAdapter());
    const { runtime, observed } = await startAgent(agent(), [], { state, agentHarness: script() });
    const result = await runtime.run({ message: "go" });
    expect(result).toMatchObject({ status: "completed", response: { text: "done" } });
    expect(calls.filter((call) => ["acquireRunLease", "getRun", "listEvents", "markObserved", "getStep", "getToolCall", "getCheckpoint"].includes(call))).toEqual([]);
    expect(calls.filter((call) => call === "appendEvents")).toHaveLength(5);
    expect(calls.at(-1)).toBe("releaseRunLease");
    const run = (await state.listRuns()).runs[0]!;
    // At rest: no lease, and the store knows observers saw every event, once each.
    expect(run).toMatchObject({ lease: null, observedSeq: run.lastSeq });
    expect(observed.map((event) => event.seq)).toEqual(Array.from({ length: run.lastSeq }, (_, index) => index + 1));
  });

  it("take the lease with a write of their own on a store that cannot lease at creation", async () => {
    const { state, calls } = counted(new LeaselessCreate());
    const { runtime, observed } = await startAgent(agent(), [], { state, agentHarness: script() });
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    expect(calls.filter((call) => call === "acquireRunLease")).toHaveLength(1);
    const run = (await state.listRuns()).runs[0]!;
    expect(run).toMatchObject({ lease: null, observedSeq: run.lastSeq });
    expect(observed.map((event) => event.seq)).toEqual(Array.from({ length: run.lastSeq }, (_, index) => index + 1));
  });
});
