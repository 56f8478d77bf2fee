import { describe, expect, it } from "vitest";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness } from "@assemblyline-agents/runtime";
import type { RunEvent } from "@assemblyline-agents/core";
import { createKernelHooks, reachesAnyone } from "../src/hooks.js";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

const script = () => scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "x" } }] }, { text: "done" }] });

/** A runtime on the echo agent, nothing tapped; `calls` counts what reached the event hook's promise. */
async function runtimeWithoutObservers() {
  const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true }) });
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const state = new InMemoryStateAdapter();
  const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: script(), logger: noopLogger() });
  const calls: RunEvent[] = [];
  const promise = runtime.hooks.event.promise.bind(runtime.hooks.event);
  runtime.hooks.event.promise = (event, context) => {
    calls.push(event);
    return promise(event, context);
  };
  return { runtime, state, calls };
}

describe("events nobody observes", () => {
  it("the kernel's own interceptor, which only wraps registrations, reaches nobody; a tap or a call interceptor does", () => {
    const hooks = createKernelHooks();
    expect(hooks.event.isUsed()).toBe(true);
    expect(reachesAnyone(hooks.event)).toBe(false);
    hooks.event.intercept({ call: () => undefined });
    expect(reachesAnyone(hooks.event)).toBe(true);
    const tapped = createKernelHooks();
    tapped.event.tap("observer", () => undefined);
    expect(reachesAnyone(tapped.event)).toBe(true);
  });

  it("are not handed to the event hook, and the observers' position still moves to the run's last event", async () => {
    const { runtime, state, calls } = await runtimeWithoutObservers();
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    expect(calls).toEqual([]);
    const run = await state.getRun(result.runId);
    expect(run!.observedSeq).toBe(run!.lastSeq);
    await runtime.close?.();
  });

  it("are handed over, each once and in order, once something taps the hook or intercepts its calls", async () => {
    const tapped = await runtimeWithoutObservers();
    const seen: number[] = [];
    tapped.runtime.hooks.event.tap("observer", (event) => {
      seen.push(event.seq);
    });
    const first = await tapped.runtime.run({ message: "go" });
    const stored = await tapped.state.listEvents(first.runId);
    expect(seen).toEqual(stored.map((event) => event.seq));
    await tapped.runtime.close?.();

    const intercepted = await runtimeWithoutObservers();
    const called: number[] = [];
    intercepted.runtime.hooks.event.intercept({ call: (event) => void called.push(event.seq) });
    const second = await intercepted.runtime.run({ message: "go" });
    expect(called).toEqual((await intercepted.state.listEvents(second.runId)).map((event) => event.seq));
    await intercepted.runtime.close?.();
  });
});
