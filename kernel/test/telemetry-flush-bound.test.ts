import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

describe("flushing the telemetry sinks", () => {
  it("hands every sink the bound runtime.flushTelemetry({ timeoutMs }) is given, and none when it is given none (close())", async () => {
    const { artifactRoot } = await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }));
    const asked: Array<[string, { timeoutMs?: number } | undefined]> = [];
    const sink = (name: string) => ({ export: () => undefined, flush: async (options?: { timeoutMs?: number }) => void asked.push([name, options]) });
    const runtime = new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state: new InMemoryStateAdapter(), agentHarness: scriptedHarness({ turns: [{ text: "hi" }] }), telemetry: [sink("a"), sink("b")], logger: noopLogger() });
    await runtime.flushTelemetry({ timeoutMs: 1_234 });
    expect(asked).toEqual([
      ["a", { timeoutMs: 1_234 }],
      ["b", { timeoutMs: 1_234 }],
    ]);
    asked.length = 0;
    await runtime.close();
    expect(asked).toEqual([
      ["a", undefined],
      ["b", undefined],
    ]);
  });
});
