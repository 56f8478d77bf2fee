import { buildAgent, createKernel, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness } from "@assemblyline-agents/runtime";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { describe, expect, it, onTestFinished } from "vitest";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

describe("a kernel given to a runtime", () => {
  it("is refused to a second runtime, even once the first is closed, naming how to make another", async () => {
    const bundle = await loadRuntimeBundle((await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }))).artifactRoot);
    const open = (kernel: Awaited<ReturnType<typeof createKernel>>) => {
      const runtime = new OpenEveRuntime({ ...bundle, kernel, state: new InMemoryStateAdapter(), agentHarness: scriptedHarness({ turns: [{ text: "hi" }] }), logger: noopLogger() });
      onTestFinished(() => runtime.close());
      return runtime;
    };
    const kernel = await createKernel();
    const first = open(kernel);

    const refusal = (() => {
      try {
        open(kernel);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(isAssemblyLineError(refusal, "AL_ERR_KERNEL_IN_USE"), String(refusal)).toBe(true);
    expect((refusal as Error).message).toMatch(/createKernel\(\{ plugins \}\).*again/);

    await first.close();
    expect(() => open(kernel)).toThrow(/AL_ERR_KERNEL_IN_USE/);
    // A kernel of its own serves it.
    expect((await open(await createKernel()).run({ message: "hi" })).status).toBe("completed");
  });

  it("stays free when the runtime given it refuses its options, so a retry with fixed options gets it", async () => {
    const bundle = await loadRuntimeBundle((await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }))).artifactRoot);
    const make = (kernel: Awaited<ReturnType<typeof createKernel>>, options: { maxConcurrentRuns?: number; hookTimeoutMs?: number }) => {
      const runtime = new OpenEveRuntime({ ...bundle, ...options, kernel, state: new InMemoryStateAdapter(), agentHarness: scriptedHarness({ turns: [{ text: "hi" }] }), logger: noopLogger() });
      onTestFinished(() => runtime.close());
      return runtime;
    };
    const kernel = await createKernel();

    expect(() => make(kernel, { maxConcurrentRuns: 0 })).toThrow(/maxConcurrentRuns/);
    expect(() => make(kernel, { maxConcurrentRuns: 4, hookTimeoutMs: 0 })).toThrow(/hookTimeoutMs/);
    const retried = make(kernel, { maxConcurrentRuns: 4 });
    expect((await retried.run({ message: "hi" })).status).toBe("completed");
    // The runtime that took it keeps it.
    expect(() => make(kernel, { maxConcurrentRuns: 4 })).toThrow(/AL_ERR_KERNEL_IN_USE/);
  });
});
