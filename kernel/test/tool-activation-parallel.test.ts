import { describe, expect, it } from "vitest";
import type { AgentHarness, ToolCallOutcome } from "@assemblyline-agents/core";
import { agentFolder, MINIMAL_AGENT, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/** An engine that makes two tool calls at once, as engines with parallel tool calls do, then reads the tools it is offered. */
function parallelDescribeHarness(target: string) {
  const seen: { outcomes: ToolCallOutcome[]; offered: string[] } = { outcomes: [], offered: [] };
  const harness: AgentHarness = {
    name: "parallel-describe",
    async runTurn(input, ctx) {
      seen.outcomes = await Promise.all([
        ctx.callTool({ id: "describe_a", name: "tool_describe", input: { name: target } }),
        ctx.callTool({ id: "describe_b", name: "tool_describe", input: { name: target } }),
      ]);
      // The live list the next model call would be given.
      seen.offered = input.context.tools.map((tool) => tool.name);
      return { status: "completed", response: { text: "described" } };
    },
  };
  return { harness, seen };
}

describe("tools activated by calls made at once", () => {
  it("offers a deferred tool once when two tool_describe calls of it run in parallel", async () => {
    const { harness, seen } = parallelDescribeHarness("lookup");
    const { runtime, events } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/lookup.ts": toolSource() }), [], { agentHarness: harness });

    const result = await runtime.run({ message: "describe lookup twice" });

    expect(result.status).toBe("completed");
    expect(seen.outcomes.map((outcome) => outcome.status)).toEqual(["completed", "completed"]);
    expect(seen.outcomes.map((outcome) => (outcome as { output: { name?: string } }).output.name)).toEqual(["lookup", "lookup"]);
    const activations = (await events(result.runId)).filter((event) => event.type === "tools.activated");
    expect(activations.map((event) => event.data)).toEqual([{ names: ["lookup"], source: "tool_describe" }]);
    expect(seen.offered.filter((name) => name === "lookup")).toHaveLength(1);
  });
});
