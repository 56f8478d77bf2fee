import { describe, expect, it } from "vitest";
import { agentFolder, MINIMAL_AGENT, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

async function askedEvent(askQuestion: string) {
  const ask = toolSource({ upFront: true, execute: `return await ctx.askQuestion(${askQuestion});` });
  const { runtime, events } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/ask.ts": ask }), [{ toolCalls: [{ name: "ask", input: { value: "x" } }] }, { text: "done" }]);
  const paused = await runtime.run({ message: "ask me" });
  expect(paused.status).toBe("waiting_input");
  const asked = (await events(paused.runId)).find((event) => event.type === "input.requested");
  expect(asked).toBeDefined();
  return { paused, data: asked!.data };
}

describe("the input.requested event of ctx.askQuestion", () => {
  it("carries the question's metadata to whoever reads the run's events (a channel's hook, a sink)", async () => {
    const { paused, data } = await askedEvent(`"Which ticket?", { choices: ["close", "keep"], metadata: { ticket: "T-1", priority: 2 } }`);
    expect(data).toMatchObject({ toolName: "ask", question: "Which ticket?", choices: ["close", "keep"], metadata: { ticket: "T-1", priority: 2 } });
    // The same metadata the pending question shows.
    expect(paused.question?.question).toMatchObject({ metadata: { ticket: "T-1", priority: 2 } });
  });

  it("has no metadata key when the question was asked without one", async () => {
    const { data } = await askedEvent(`"Go on?"`);
    expect(data).toMatchObject({ toolName: "ask", question: "Go on?" });
    expect(data).not.toHaveProperty("metadata");
  });
});
