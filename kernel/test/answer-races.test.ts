import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const ask = (question: string) => ({ toolCalls: [{ name: "ask_question", input: { question } }] });

describe("answers without a call id", () => {
  it("answer only the question they were sent for: the same answer sent twice never answers the next question", async () => {
    const { runtime, state } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [ask("Delete the staging DB?"), ask("Delete the PRODUCTION DB?"), { text: "done" }]);
    const asking = await runtime.run({ message: "clean up" });
    expect(asking.status).toBe("waiting_input");
    // A retried request: the second answer waits for the first one's drive, which asks the next question.
    const twice = await Promise.allSettled([runtime.answer(asking.runId, "yes"), runtime.answer(asking.runId, "yes")]);
    // Whichever is driven first answers the question; the other is refused.
    const [answered, refused] = twice[0].status === "fulfilled" ? twice : [twice[1], twice[0]];
    expect(answered).toMatchObject({ status: "fulfilled", value: { status: "waiting_input" } });
    expect(refused).toMatchObject({ status: "rejected", reason: { code: "AL_ERR_APPROVAL_NOT_FOUND", message: expect.stringContaining("already answered") } });
    const calls = await state.listToolCalls(asking.runId);
    expect(calls.map((call) => [call.input, call.status])).toEqual([
      [{ question: "Delete the staging DB?" }, "completed"],
      [{ question: "Delete the PRODUCTION DB?" }, "waiting_input"],
    ]);
  });

  it("still answer the question the run asks when nothing moved it on meanwhile", async () => {
    const { runtime } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [ask("Which region?"), { text: "done" }]);
    const asking = await runtime.run({ message: "deploy" });
    expect(await runtime.answer(asking.runId, "eu-west")).toMatchObject({ status: "completed" });
  });
});
