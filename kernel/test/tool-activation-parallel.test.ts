import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import type { AgentHarness, NewRunEvent, RunStateChange, ToolCallOutcome } from "@assemblyline-agents/core";
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

/** A store whose first write of a `tools.activated` event fails, as a store that drops a connection once does. */
class FirstActivationFails extends InMemoryStateAdapter {
  failed = false;
  override async appendEvents(runId: string, events: NewRunEvent[], change?: RunStateChange, options?: Parameters<InMemoryStateAdapter["appendEvents"]>[3]) {
    if (!this.failed && events.some((event) => event.type === "tools.activated")) {
      this.failed = true;
      throw new Error("connection dropped while recording the activation");
    }
    return super.appendEvents(runId, events, change, options);
  }
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

  it("records a tool itself when the call beside it failed to record it, instead of failing with that call's error", async () => {
    const { harness, seen } = parallelDescribeHarness("lookup");
    const state = new FirstActivationFails();
    const { runtime, events } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/lookup.ts": toolSource() }), [], { agentHarness: harness, state });

    const result = await runtime.run({ message: "describe lookup twice" });

    expect(state.failed).toBe(true);
    // Either call may be the one that reserved the name first: that one fails with the store's error, the other describes the tool.
    expect(seen.outcomes.map((outcome) => outcome.status).sort()).toEqual(["completed", "failed"]);
    const described = seen.outcomes.find((outcome) => outcome.status === "completed") as { output: { name?: string } };
    expect(described.output.name).toBe("lookup");
    const activations = (await events(result.runId)).filter((event) => event.type === "tools.activated");
    expect(activations.map((event) => event.data)).toEqual([{ names: ["lookup"], source: "tool_describe" }]);
    expect(seen.offered.filter((name) => name === "lookup")).toHaveLength(1);
  });
});
