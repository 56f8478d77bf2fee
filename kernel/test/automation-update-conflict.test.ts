import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { agentFolder } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", dynamicAutomations: { dynamic: true, approval: false } });
`;

/** A store where another writer changes every row between each read and write: no compare-and-set ever holds. */
class AlwaysChanged extends InMemoryStateAdapter {
  replaces = 0;
  override async replaceSchedule(): Promise<boolean> {
    this.replaces += 1;
    return false;
  }
}

describe("a change to an automation that keeps changing under it", () => {
  it("is given up after its tries with AL_ERR_AUTOMATION_CONFLICT, writing nothing of it", async () => {
    const state = new AlwaysChanged();
    const { runtime } = await startAgent(agentFolder({ "agent.ts": AGENT }), [], { state });
    await runtime.automations.create({ name: "digest", schedule: "0 9 * * *", message: "before" });
    await expect(runtime.automations.update("digest", { message: "after" })).rejects.toMatchObject({
      code: "AL_ERR_AUTOMATION_CONFLICT",
      message: expect.stringContaining('automation "digest" changed 8 times'),
    });
    expect(state.replaces).toBe(8);
    expect(await runtime.automations.get("digest")).toMatchObject({ message: "before" });
    await expect(runtime.automations.setPaused("digest", true)).rejects.toMatchObject({ code: "AL_ERR_AUTOMATION_CONFLICT" });
    expect(await runtime.automations.get("digest")).toMatchObject({ paused: false });
  });
});
