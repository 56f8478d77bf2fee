import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { agentFolder } from "./support/agent-folder.js";
import { outputOf } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "learner", model: "test/model", instructions: "Learn.", selfImprovement: { writable: true } });
`;

function learner() {
  return agentFolder({ "agent.ts": AGENT, "skills/notes/SKILL.md": "---\ndescription: Take notes.\n---\nWrite it down.\n" });
}

describe("a /skills path the skill store cannot hold", () => {
  it("is refused to the model, naming the path and the rule, and the run goes on", async () => {
    const state = new InMemoryStateAdapter();
    const { runtime, log } = await startAgent(learner(), [
      { toolCalls: [{ name: "write", input: { path: "/skills/notes/refs\\hosts.md", content: "web-1" } }] },
      { toolCalls: [{ name: "write", input: { path: "/skills/Notes/SKILL.md", content: "---\ndescription: Upper case.\n---\nNo.\n" } }] },
      { toolCalls: [{ name: "delete", input: { path: "/skills/notes/refs\\hosts.md" } }] },
      { toolCalls: [{ name: "write", input: { path: "/skills/notes/refs/hosts.md", content: "web-1" } }] },
      { text: "corrected" },
    ], { state });
    const result = await runtime.run({ message: "learn" });
    expect(result.status).toBe("completed");

    const [backslash, upperCase, deleted, corrected] = log.outcomes.map(({ outcome }) => outputOf(outcome));
    expect(backslash).toMatchObject({ code: "AL_ERR_SKILL_DEFINITION", error: expect.stringContaining('"refs\\hosts.md" is not a file path inside the skill folder') });
    expect(upperCase).toMatchObject({ code: "AL_ERR_SKILL_DEFINITION", error: expect.stringContaining('"Notes" is not a skill name') });
    expect(deleted).toMatchObject({ code: "AL_ERR_SKILL_DEFINITION" });
    expect(corrected).toEqual({ path: "/skills/notes/refs/hosts.md", bytes: 5 });
    expect(Object.keys((await state.getSkill("learner", "notes"))!.files).sort()).toEqual(["SKILL.md", "refs/hosts.md"]);
    expect(await state.getSkill("learner", "Notes")).toBeUndefined();
  });
});
