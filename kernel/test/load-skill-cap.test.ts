import { describe, expect, it } from "vitest";
import { agentFolder } from "./support/agent-folder.js";
import { outputOf } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "Follow skills." });
`;

describe("load_skill on a very long procedure", () => {
  it("returns its first 32,000 characters and says how much more there is and where", async () => {
    const body = `START\n${"x".repeat(49_994)}`;
    const dir = agentFolder({ "agent.ts": AGENT, "skills/huge/SKILL.md": `---\ndescription: Huge.\n---\n${body}\n` });
    const { runtime, log } = await startAgent(dir, [{ toolCalls: [{ name: "load_skill", input: { name: "huge" } }] }, { text: "ok" }]);
    expect((await runtime.run({ message: "go" })).status).toBe("completed");

    const { instructions } = outputOf(log.outcomes[0]!.outcome) as { instructions: string };
    expect(instructions.startsWith("START\n")).toBe(true);
    const [head, note] = instructions.split("\n[procedure cut: ");
    expect(head).toHaveLength(32_000);
    // The procedure is the 50,000 characters and SKILL.md's final newline.
    expect(note).toBe("18001 more characters; read /skills/huge/SKILL.md for the rest]");
  });

  it("returns a procedure within the limit whole", async () => {
    const body = "1. Do the thing.\n2. Check it.";
    const dir = agentFolder({ "agent.ts": AGENT, "skills/small/SKILL.md": `---\ndescription: Small.\n---\n${body}\n` });
    const { runtime, log } = await startAgent(dir, [{ toolCalls: [{ name: "load_skill", input: { name: "small" } }] }, { text: "ok" }]);
    await runtime.run({ message: "go" });
    expect((outputOf(log.outcomes[0]!.outcome) as { instructions: string }).instructions.trim()).toBe(body);
  });
});
