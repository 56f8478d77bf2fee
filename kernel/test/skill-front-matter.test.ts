import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter, buildAgent, parseSkillFile } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

declare global {
  // Set by front matter that managed to run as code.
  var skillFrontMatterRan: boolean | undefined;
}

const CODE_FRONT_MATTER = "---js\n{ description: (globalThis.skillFrontMatterRan = true, 'ran') }\n---\nbody\n";

describe("SKILL.md front matter", () => {
  it("is YAML only: front matter in another language (---js) is refused and never runs", () => {
    globalThis.skillFrontMatterRan = undefined;
    for (const text of [CODE_FRONT_MATTER, CODE_FRONT_MATTER.replace("---js", "---javascript"), CODE_FRONT_MATTER.replace("---js", "--- JS")]) {
      expect(() => parseSkillFile(text, "x", "skills/x/SKILL.md")).toThrow(expect.objectContaining({ code: "AL_ERR_SKILL_DEFINITION", message: expect.stringMatching(/skills\/x\/SKILL\.md: .*YAML/) }));
    }
    expect(globalThis.skillFrontMatterRan).toBeUndefined();
    // An explicit ---yaml is still YAML.
    expect(parseSkillFile("---yaml\ndescription: fine\n---\nbody\n", "x", "here").description).toBe("fine");
  });

  it("says a SKILL.md without front matter lacks it (not that its first line is a language), and reads one after a byte order mark", () => {
    for (const text of ["# Triage\n\nSort tickets by severity.\n", "Sort tickets.\n", ""]) {
      expect(() => parseSkillFile(text, "triage", "skills/triage/SKILL.md")).toThrow(
        expect.objectContaining({ code: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining("skills/triage/SKILL.md: has no front matter (a description is required)") }),
      );
    }
    expect(parseSkillFile("\uFEFF---\ndescription: Sort tickets\n---\nbody\n", "triage", "here")).toMatchObject({ description: "Sort tickets", body: "body\n" });
  });

  it("refuses code front matter at build time, naming the file", async () => {
    globalThis.skillFrontMatterRan = undefined;
    const agent = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model" });\n`;
    await expect(buildAgent(agentFolder({ "agent.ts": agent, "skills/x/SKILL.md": CODE_FRONT_MATTER }))).rejects.toMatchObject({ code: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining("skills/x/SKILL.md") });
    expect(globalThis.skillFrontMatterRan).toBeUndefined();
  });

  it("refuses an agent's SKILL.md write with code front matter, without running it in the host", async () => {
    globalThis.skillFrontMatterRan = undefined;
    const agent = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "learner", model: "test/model", selfImprovement: { writable: true } });\n`;
    const state = new InMemoryStateAdapter();
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": agent, "tools/noop.ts": toolSource({ execute: "return {};" }) }), [
      { toolCalls: [{ name: "write", input: { path: "/skills/evil/SKILL.md", content: CODE_FRONT_MATTER } }] },
      { text: "done" },
    ], { state });
    const result = await runtime.run({ message: "learn" });
    expect(globalThis.skillFrontMatterRan).toBeUndefined();
    expect(JSON.stringify(log.outcomes[0]!.outcome)).toContain("AL_ERR_SKILL_DEFINITION");
    expect(await state.getSkill("learner", "evil")).toBeUndefined();
    expect(result.status).not.toBe("waiting_approval");
  });
});
