import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter, buildAgent, parseSkillFile, skillDigest } from "@assemblyline-agents/runtime";
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

  it("refuses front matter with no closing --- line, which would read the whole procedure as YAML and lose it", () => {
    for (const text of ["---\ndescription: Sort tickets.\n# Triage\n\nSort by severity.\n", "---\ndescription: Sort tickets.\n", "\uFEFF---\ndescription: Sort tickets."]) {
      expect(() => parseSkillFile(text, "triage", "skills/triage/SKILL.md")).toThrow(
        expect.objectContaining({
          code: "AL_ERR_SKILL_DEFINITION",
          message: expect.stringContaining("skills/triage/SKILL.md: front matter has no closing --- line"),
          fix: expect.stringContaining("closing ---"),
        }),
      );
    }
    // Closed on the last line, with nothing after it, or with CRLF line ends, it is whole.
    expect(parseSkillFile("---\ndescription: Sort tickets.\n---", "triage", "here")).toMatchObject({ description: "Sort tickets.", body: "" });
    expect(parseSkillFile("---\r\ndescription: Sort tickets.\r\n---\r\nSort.\r\n", "triage", "here").description).toBe("Sort tickets.");
  });

  it("says a description YAML reads as a date, a boolean or a number must be quoted text, rather than that it is missing", () => {
    for (const value of ["2024-01-01", "true", "42"]) {
      expect(() => parseSkillFile(`---\ndescription: ${value}\n---\nbody\n`, "x", "skills/x/SKILL.md")).toThrow(
        expect.objectContaining({
          code: "AL_ERR_SKILL_DEFINITION",
          message: expect.stringMatching(/skills\/x\/SKILL\.md: description must be text, but YAML reads it as an? (date|boolean|number)/),
          fix: expect.stringContaining('description: "'),
        }),
      );
    }
    expect(parseSkillFile('---\ndescription: "2024-01-01"\n---\nbody\n', "x", "here").description).toBe("2024-01-01");
  });

  it("refuses code front matter at build time, naming the file", async () => {
    globalThis.skillFrontMatterRan = undefined;
    const agent = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model" });\n`;
    await expect(buildAgent(agentFolder({ "agent.ts": agent, "skills/x/SKILL.md": CODE_FRONT_MATTER }))).rejects.toMatchObject({ code: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining("skills/x/SKILL.md") });
    expect(globalThis.skillFrontMatterRan).toBeUndefined();
  });

  it("refuses at build, and in an agent's write, a SKILL.md whose front matter is never closed", async () => {
    const unclosed = "---\ndescription: Triage tickets.\n# Triage\n\n1. Sort by severity.\n";
    const agent = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "learner", model: "test/model", selfImprovement: { writable: true } });\n`;
    await expect(buildAgent(agentFolder({ "agent.ts": agent, "skills/triage/SKILL.md": unclosed }))).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining("skills/triage/SKILL.md: front matter has no closing --- line"),
    });
    const state = new InMemoryStateAdapter();
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": agent }), [
      { toolCalls: [{ name: "write", input: { path: "/skills/triage/SKILL.md", content: unclosed } }] },
      { text: "done" },
    ], { state });
    expect((await runtime.run({ message: "learn" })).status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toMatchObject({ isError: true, output: { code: "AL_ERR_SKILL_DEFINITION", error: expect.stringContaining("front matter has no closing --- line") } });
    expect(await state.getSkill("learner", "triage")).toBeUndefined();
  });

  it("still reads a SKILL.md with unclosed front matter the store took before the closing line was required, instead of failing every run", async () => {
    const agent = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "learner", model: "test/model", selfImprovement: { writable: true } });\n`;
    const state = new InMemoryStateAdapter();
    const files = { "SKILL.md": "---\ndescription: Triage tickets.\n# Triage\n" };
    const record = { agentId: "learner", name: "triage", files, digest: skillDigest(files), seedDigest: null, seedRevision: null, changedBy: "agent" as const, conflict: null, updatedAt: new Date().toISOString() };
    expect(await state.putSkill(record, { expectedDigest: null })).toBe(true);
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": agent }), [{ text: "done" }], { state });
    expect((await runtime.run({ message: "hi" })).status).toBe("completed");
    expect(log.contexts[0]!.instructions).toContain("- triage: Triage tickets.");
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
