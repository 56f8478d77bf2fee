import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const counter = () => globalThis as { __bodyRuns?: number; __caught?: string };

async function runTool(execute: string) {
  const tool = toolSource({ upFront: true, execute });
  const started = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/charge.ts": tool }), [{ toolCalls: [{ name: "charge", input: { value: "x" } }] }, { text: "done" }]);
  const result = await started.runtime.run({ message: "go" });
  const failed = (await started.events(result.runId)).find((event) => event.type === "tool.execution_failed");
  return { ...started, result, failed };
}

describe("ctx.step metadata that is not JSON", () => {
  it("is refused before the step body runs, naming the step's metadata and the bad value's path", async () => {
    counter().__bodyRuns = 0;
    const { failed, state, result } = await runTool(
      `return ctx.step("charge", async () => { globalThis.__bodyRuns += 1; return { charged: true }; }, { metadata: { amount: 10, at: new Date(0) } });`,
    );
    // The body's side effect (a charge) must not happen when its step could never be recorded.
    expect(counter().__bodyRuns).toBe(0);
    expect(failed?.data).toMatchObject({ code: "AL_ERR_STEP_RESULT", error: expect.stringContaining('ctx.step("charge") metadata.at is a Date, not a plain object') });
    expect(await state.getStep(result.runId, "charge")).toBeFalsy();
  });

  it("records a step whose metadata is plain JSON", async () => {
    counter().__bodyRuns = 0;
    const { failed, state, result } = await runTool(`return ctx.step("charge", async () => { globalThis.__bodyRuns += 1; return { charged: true }; }, { metadata: { amount: 10 } });`);
    expect(failed).toBeUndefined();
    expect(counter().__bodyRuns).toBe(1);
    expect(await state.getStep(result.runId, "charge")).toMatchObject({ result: { charged: true }, metadata: { amount: 10 } });
  });
});

describe("ctx.askQuestion options that cannot be recorded", () => {
  it("refuses metadata that is not JSON where the tool can catch it, naming the bad value", async () => {
    counter().__caught = undefined;
    const { failed, result } = await runTool(
      `try { await ctx.askQuestion("Charge?", { metadata: { limit: 10n } }); } catch (error) { globalThis.__caught = error.code; throw error; }`,
    );
    expect(counter().__caught).toBe("AL_ERR_TOOL_OUTPUT");
    expect(failed?.data).toMatchObject({ code: "AL_ERR_TOOL_OUTPUT", error: expect.stringContaining("ctx.askQuestion metadata.limit is a bigint") });
    expect(result.status).toBe("failed");
  });

  it("refuses a choice that is not a string", async () => {
    const { failed } = await runTool(`return ctx.askQuestion("Which size?", { choices: ["small", 2] });`);
    expect(failed?.data).toMatchObject({ code: "AL_ERR_TOOL_OUTPUT", error: expect.stringContaining("ctx.askQuestion choices[1] is a number, not a string") });
  });
});
