import { describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const SUBAGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Does delegated work." });
`;
const DISABLED = `import { disableTool } from "@assemblyline-agents/core";\nexport default disableTool();\n`;
const skill = (tools: string[] = []) => `---\ndescription: A procedure.\ntools: [${tools.join(", ")}]\n---\n1. Do the thing.\n`;

describe("a subagent's built-in slots", () => {
  it("goes without load_skill when the root disables it, though it and its own subagent have skills", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/load_skill.ts": DISABLED,
      "skills/root_skill/SKILL.md": skill(),
      "subagents/worker/agent.ts": SUBAGENT,
      "subagents/worker/skills/child_skill/SKILL.md": skill(),
      "subagents/worker/subagents/helper/agent.ts": SUBAGENT,
      "subagents/worker/subagents/helper/skills/grandchild_skill/SKILL.md": skill(),
    });
    const { runtime } = await startAgent(dir, [{ text: "done" }]);
    const worker = runtime.profiles.subagents.get("worker")!;
    expect(runtime.profiles.table.has("load_skill")).toBe(false);
    expect(worker.table.has("load_skill")).toBe(false);
    expect(worker.subagents.get("helper")!.table.has("load_skill")).toBe(false);
  });

  it("goes without spawn_subagent when the root disables it, though it has subagents of its own", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/spawn_subagent.ts": DISABLED,
      "subagents/worker/agent.ts": SUBAGENT,
      "subagents/worker/subagents/helper/agent.ts": SUBAGENT,
    });
    const { runtime } = await startAgent(dir, [{ text: "done" }]);
    expect(runtime.profiles.table.has("spawn_subagent")).toBe(false);
    expect(runtime.profiles.subagents.get("worker")!.table.has("spawn_subagent")).toBe(false);
  });

  it("gets its own load_skill when it has skills and its parent has none to hand down", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "subagents/worker/agent.ts": SUBAGENT,
      "subagents/worker/skills/child_skill/SKILL.md": skill(),
    });
    const { runtime } = await startAgent(dir, [{ text: "done" }]);
    expect(runtime.profiles.table.has("load_skill")).toBe(false);
    expect(runtime.profiles.subagents.get("worker")!.table.get("load_skill")).toMatchObject({ origin: "built-in" });
  });

  it("keeps a slot the root disabled when it overrides it, and hands its override down to its own subagents", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/grep.ts": DISABLED,
      "subagents/worker/agent.ts": SUBAGENT,
      "subagents/worker/tools/grep.ts": toolSource({ schema: `{ type: "object" }`, execute: "return { own: true };" }),
      "subagents/worker/subagents/helper/agent.ts": SUBAGENT,
      "subagents/worker/subagents/helper/skills/search/SKILL.md": skill(["grep"]),
      "subagents/other/agent.ts": SUBAGENT,
    });
    const { runtime } = await startAgent(dir, [{ text: "done" }]);
    const worker = runtime.profiles.subagents.get("worker")!;
    expect(runtime.profiles.table.has("grep")).toBe(false);
    expect(runtime.profiles.subagents.get("other")!.table.has("grep")).toBe(false);
    expect(worker.table.get("grep")).toMatchObject({ origin: "override" });
    expect(worker.subagents.get("helper")!.table.get("grep")).toBe(worker.table.get("grep"));
  });

  it("refuses a subagent's SKILL.md that activates a built-in disabled above it, naming the skill and the tool", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/grep.ts": DISABLED,
      "subagents/worker/agent.ts": SUBAGENT,
      "subagents/worker/subagents/helper/agent.ts": SUBAGENT,
      "subagents/worker/subagents/helper/skills/search/SKILL.md": skill(["grep"]),
    });
    await expect(buildAgent(dir)).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining('subagents/worker/subagents/helper/skills/search/SKILL.md activates "grep", which this agent does not have (disableTool() removes "grep")'),
    });
  });

  it("offers the parent tools it names up front, but a skill-only one only with its skill", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/summarize.ts": toolSource(),
      "tools/publish_notes.ts": toolSource({ extra: `capability: { visibility: "skill" },` }),
      "subagents/worker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Publishes release notes.", tools: ["summarize", "publish_notes"] });
`,
      "subagents/worker/skills/release/SKILL.md": skill(["publish_notes"]),
    });
    const { runtime } = await startAgent(dir, [{ text: "done" }]);
    const worker = runtime.profiles.subagents.get("worker")!;
    expect(worker.table.get("summarize")).toMatchObject({ defaultVisible: true });
    expect(worker.table.get("publish_notes")).toMatchObject({ visibility: "skill", defaultVisible: false });
  });
});
