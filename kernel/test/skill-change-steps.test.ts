import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import type { NewRunEvent, RunEvent, RunStateChange } from "@assemblyline-agents/core";
import { AssemblyLineError } from "@assemblyline-agents/core";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "learner", model: "test/model", instructions: "Learn.", selfImprovement: { writable: true } });
`;
const NO_INPUT = `{ type: "object", properties: {}, additionalProperties: false }`;
const BETA = "---\\ndescription: B.\\n---\\ndo b\\n";

/** A tool that creates "alpha" with ctx.selfImprovement, then writes "beta" with the write tool, in one call. */
function learner() {
  return agentFolder({
    "agent.ts": AGENT,
    "tools/learn.ts": toolSource({
      upFront: true,
      schema: NO_INPUT,
      imports: `import { builtInToolDefaults } from "@assemblyline-agents/runtime";`,
      execute: `
        const a = await ctx.selfImprovement.create({ name: "alpha", description: "A.", body: "do a" });
        const b = await builtInToolDefaults.write.execute({ path: "/skills/beta/SKILL.md", content: "${BETA}" }, ctx);
        return { a, b };`,
    }),
  });
}

/** In-memory state whose second append holding a skill.changed event fails, as if the process died right before it. */
class CrashBeforeSecondSkillChange extends InMemoryStateAdapter {
  private seen = 0;

  override async appendEvents(runId: string, events: NewRunEvent[], change?: RunStateChange, options?: Parameters<InMemoryStateAdapter["appendEvents"]>[3]): Promise<RunEvent[]> {
    if (events.some((event) => event.type === "skill.changed") && ++this.seen === 2) {
      throw new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", "the state store went away before the second skill.changed was recorded");
    }
    return super.appendEvents(runId, events, change, options);
  }
}

const stepKeys = (events: RunEvent[]) => events.filter((event) => event.type === "durable_step.completed").map((event) => String(event.data.key)).filter((key) => key.startsWith("skill-change:"));

describe("the skill changes of one tool call", () => {
  it("makes a ctx.selfImprovement change and a /skills write of the same call, each under its own step keys", async () => {
    const { runtime, log, events } = await startAgent(learner(), [{ toolCalls: [{ name: "learn", input: {} }] }, { text: "done" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    expect(log.outcomes.at(-1)).toMatchObject({ outcome: { isError: false, output: { a: { name: "alpha" }, b: { path: "/skills/beta/SKILL.md" } } } });
    expect((await runtime.skills().list()).map((skill) => skill.name)).toEqual(["alpha", "beta"]);
    const recorded = await events(result.runId);
    expect(recorded.filter((event) => event.type === "skill.changed").map((event) => event.data.name)).toEqual(["alpha", "beta"]);
    // Numbered across both, in call order: the first change keeps the key it had when each counted alone.
    const callId = log.outcomes.at(-1)!.call.id;
    expect(stepKeys(recorded)).toEqual([`skill-change:${callId}:0:before`, `skill-change:${callId}:0:change`, `skill-change:${callId}:1:before`, `skill-change:${callId}:1:change`]);
  });

  it("replays the first change and finishes the second when the call runs again after a crash between them", async () => {
    const state = new CrashBeforeSecondSkillChange();
    const { runtime, log, events } = await startAgent(learner(), [{ toolCalls: [{ name: "learn", input: {} }] }, { text: "done" }], { state });
    await expect(runtime.run({ message: "go" })).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    const [run] = (await state.listRuns()).runs;
    expect((await runtime.resume(run!.id)).status).toBe("completed");
    expect(log.outcomes.at(-1)).toMatchObject({ outcome: { isError: false } });
    expect((await runtime.skills().get("beta"))?.body).toBe("do b\n");
    const recorded = await events(run!.id);
    expect(recorded.filter((event) => event.type === "skill.changed").map((event) => event.data.name)).toEqual(["alpha", "beta"]);
    expect(recorded.filter((event) => event.type === "durable_step.replayed").map((event) => event.data.key)).toEqual(expect.arrayContaining([expect.stringMatching(/^skill-change:.*:0:change$/)]));
  });
});
