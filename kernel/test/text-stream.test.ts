import { describe, expect, it } from "vitest";
import type { AgentHarness } from "@assemblyline-agents/core";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { startBuilt } from "./support/runtime.js";

describe("streamed text", () => {
  it("reaches the host as the engine streams it, with a restart where the engine voids what it streamed of the reply", async () => {
    // An engine whose provider broke off after one delta and that asks again: the reply streams from its start.
    const retrying: AgentHarness = {
      name: "retrying",
      async runTurn(_input, ctx) {
        ctx.textDelta("The capital ");
        ctx.textRestart?.();
        ctx.textDelta("The capital of France is Paris.");
        return { status: "completed", response: { text: "The capital of France is Paris." } };
      },
    };
    const shown: string[] = [];
    const { runtime } = await startBuilt(agentFolder({ "agent.ts": MINIMAL_AGENT }), {
      agentHarness: retrying,
      onTextDelta: (runId, delta) => shown.push(`${runId}: ${delta}`),
      onTextRestart: (runId) => shown.push(`${runId}: restart`),
    });
    const result = await runtime.run({ message: "Capital of France?" });
    expect(result).toMatchObject({ status: "completed", response: { text: "The capital of France is Paris." } });
    expect(shown).toEqual([`${result.runId}: The capital `, `${result.runId}: restart`, `${result.runId}: The capital of France is Paris.`]);
  });
});
