import { describe, expect, it } from "vitest";
import { agentFolder, MINIMAL_AGENT } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

describe("runtime.submit() and observers", () => {
  it("tells observers of a queued run at once by default", async () => {
    const { runtime, observed, state } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }]);
    const { runId } = await runtime.submit({ message: "hello" });
    expect(observed.map((event) => [event.runId, event.type])).toEqual([[runId, "run.created"]]);
    expect((await state.getRun(runId))!.observedSeq).toBe(1);
  });

  it("with observe: false leaves run.created to the run's first drive, which tells observers of every event once, in order", async () => {
    const { runtime, observed, state, events } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }]);
    const { runId, created } = await runtime.submit({ message: "hello" }, { observe: false });
    expect(created).toBe(true);
    expect(observed).toEqual([]);
    expect((await state.getRun(runId))!).toMatchObject({ status: "queued", observedSeq: 0 });
    expect(await runtime.start(runId)).toMatchObject({ status: "completed", response: { text: "hi" } });
    const stored = await events(runId);
    expect(observed.map((event) => event.seq)).toEqual(stored.map((event) => event.seq));
    expect(observed[0]!.type).toBe("run.created");
    expect((await state.getRun(runId))!.observedSeq).toBe(stored.at(-1)!.seq);
  });
});
