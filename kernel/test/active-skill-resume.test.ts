import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "deployer", model: "test/model", instructions: "Deploy.", selfImprovement: { writable: true } });
`;
const LOADED = "STEP ONE: run the smoke tests first.";
const CONFIRM = toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Check first."),` });

/** A run that loads the deploy skill, then pauses for an approval; `state` holds its skills. */
async function pausedAfterLoading(state: InMemoryStateAdapter) {
  const dir = agentFolder({ "agent.ts": AGENT, "skills/deploy/SKILL.md": `---\ndescription: Deploy.\n---\n${LOADED}\n`, "tools/confirm.ts": CONFIRM });
  const started = await startAgent(dir, [
    { toolCalls: [{ name: "load_skill", input: { name: "deploy" } }] },
    { toolCalls: [{ name: "confirm", input: { value: "go" } }] },
    { text: "done" },
  ], { state });
  const paused = await started.runtime.run({ message: "deploy" });
  expect(paused.status).toBe("waiting_approval");
  return { ...started, runId: paused.runId };
}

/** What the resumed turn's context says under the skill's heading. */
function activeSkillPart(instructions: string): string {
  const start = instructions.indexOf("## Active skill: deploy");
  expect(start).toBeGreaterThanOrEqual(0);
  const end = instructions.indexOf("\n## ", start + 1);
  return instructions.slice(start, end === -1 ? undefined : end);
}

describe("a loaded skill, when the run resumes", () => {
  it("keeps the procedure the run loaded when the skill changed meanwhile, and says it changed", async () => {
    const state = new InMemoryStateAdapter();
    const { runtime, log, runId } = await pausedAfterLoading(state);
    // While the run waits, someone rewrites the skill.
    await runtime.skills().putFiles("deploy", () => ({ "SKILL.md": "---\ndescription: Deploy.\n---\nSKIP the smoke tests.\n" }), "user", true);

    expect((await runtime.approve(runId)).status).toBe("completed");
    const part = activeSkillPart(log.contexts.at(-1)!.instructions);
    expect(part).toContain(LOADED);
    expect(part).not.toContain("SKIP the smoke tests.");
    expect(part).toContain("changed since this run loaded it");
  });

  it("keeps the procedure the run loaded when the skill was deleted meanwhile, and says it was deleted", async () => {
    const state = new InMemoryStateAdapter();
    const { runtime, log, runId } = await pausedAfterLoading(state);
    await runtime.skills().deleteFile("deploy", "SKILL.md", undefined, "user");

    expect((await runtime.approve(runId)).status).toBe("completed");
    const part = activeSkillPart(log.contexts.at(-1)!.instructions);
    expect(part).toContain(LOADED);
    expect(part).toContain("deleted since this run loaded it");
  });

  it("shows the current procedure without a notice when the skill is unchanged", async () => {
    const state = new InMemoryStateAdapter();
    const { runtime, log, runId } = await pausedAfterLoading(state);
    expect((await runtime.approve(runId)).status).toBe("completed");
    expect(activeSkillPart(log.contexts.at(-1)!.instructions).trim()).toBe(`## Active skill: deploy\n${LOADED}`);
  });
});
