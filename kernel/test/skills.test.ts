import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter, buildAgent } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource, writeFiles } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "Release manager." });
`;

const SKILL = `---
description: Write release notes from merged pull requests.
tools: [publish_notes]
---
1. Collect the merged pull requests.
2. Publish with publish_notes.
`;

const PUBLISH = toolSource({
  extra: `capability: { visibility: "skill" },`,
  execute: `return { published: input.value };`,
});

function releaseAgent(extra: Record<string, string> = {}) {
  return agentFolder({
    "agent.ts": AGENT,
    "skills/release-notes/SKILL.md": SKILL,
    "skills/release-notes/references/style.md": "Use past tense.",
    "tools/publish_notes.ts": PUBLISH,
    ...extra,
  });
}

describe("skills", () => {
  it("compiles SKILL.md front matter and resources into the manifest, counted in the revision", async () => {
    const dir = releaseAgent();
    const first = await buildAgent(dir);
    expect(first.manifest.skills).toEqual([
      expect.objectContaining({
        name: "release-notes",
        description: "Write release notes from merged pull requests.",
        tools: ["publish_notes"],
        dir: "skills/release-notes",
        files: { "SKILL.md": SKILL, "references/style.md": "Use past tense." },
      }),
    ]);
    writeFiles(dir, { "skills/release-notes/references/style.md": "Use present tense." });
    expect((await buildAgent(dir)).manifest.agentRevision).not.toBe(first.manifest.agentRevision);
  });

  it("refuses a SKILL.md without a description, or one naming a tool the agent lacks", async () => {
    await expect(buildAgent(agentFolder({ "agent.ts": AGENT, "skills/x/SKILL.md": "---\nname: x\n---\nbody" }))).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining("skills/x/SKILL.md: front matter has no description"),
    });
    await expect(buildAgent(agentFolder({ "agent.ts": AGENT, "skills/x/SKILL.md": "---\ndescription: d\ntools: [nope]\n---\nbody" }))).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining('activates "nope"'),
    });
  });

  it("refuses a SKILL.md that activates a built-in the agent removed with disableTool(), and builds one that activates an override", async () => {
    const searching = (tool: string) => ({
      "agent.ts": AGENT,
      [`tools/${tool}.ts`]: `import { disableTool } from "@assemblyline-agents/core";\nexport default disableTool();\n`,
      "skills/search/SKILL.md": `---\ndescription: Search the notes.\ntools: [${tool}]\n---\n1. Search.\n`,
    });
    const error = await buildAgent(agentFolder(searching("grep"))).catch((caught: Error & { code?: string }) => caught);
    expect(error).toMatchObject({ code: "AL_ERR_SKILL_DEFINITION" });
    expect((error as Error).message).toContain('skills/search/SKILL.md activates "grep", which this agent does not have (disableTool() removes "grep")');
    expect((error as Error).message).toMatch(/fix: Take "grep" out of the skill's tools, or keep the built-in/);
    const overridden = { ...searching("grep"), "tools/grep.ts": toolSource({ schema: `{ type: "object" }`, execute: "return {};" }) };
    expect((await buildAgent(agentFolder(overridden))).manifest.skills[0]!.tools).toEqual(["grep"]);
  });

  it("refuses a skill file that is a link (it could copy any file of the building machine into the build) or not UTF-8 text", async () => {
    const linked = releaseAgent();
    symlinkSync("/etc/hostname", join(linked, "skills/release-notes/references/host.md"));
    await expect(buildAgent(linked)).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining("skills/release-notes/references/host.md is a symbolic link"),
    });
    const binary = releaseAgent();
    writeFileSync(join(binary, "skills/release-notes/references/logo.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0xfe]));
    await expect(buildAgent(binary)).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining("skills/release-notes/references/logo.png is not UTF-8 text"),
    });
  });

  it("refuses a skill file whose name the skill store refuses (a '\\' in it), which would fail every run that seeds the skill", async () => {
    const dir = releaseAgent({ "skills/release-notes/refs\\style.md": "Use past tense." });
    await expect(buildAgent(dir)).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining('skills/release-notes/refs\\style.md: "refs\\style.md" is not a file path the skill store can hold'),
    });
    const nested = agentFolder({
      "agent.ts": AGENT,
      "subagents/writer/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Writes." });\n`,
      "subagents/writer/skills/notes/SKILL.md": "---\ndescription: Notes.\n---\nRead it.\n",
      "subagents/writer/skills/notes/a\\b.md": "text",
    });
    await expect(buildAgent(nested)).rejects.toMatchObject({ code: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining("subagents/writer/skills/notes/a\\b.md") });
  });

  it("refuses a skill file whose name holds a control character, which no file tool could read or delete, naming it on one line", async () => {
    await expect(buildAgent(releaseAgent({ "skills/release-notes/refs/a\nb.md": "text" }))).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining('skills/release-notes/refs/a\\u000ab.md: "refs/a\\u000ab.md" is not a file path the skill store can hold: it holds a control character'),
      fix: expect.stringContaining("control characters"),
    });
  });

  it("refuses a file put straight in skills/ (a skill is a folder), and passes over a README.md and dotfiles there", async () => {
    await expect(buildAgent(agentFolder({ "agent.ts": AGENT, "skills/SKILL.md": "---\ndescription: Do it.\n---\nSteps.\n" }))).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining("skills/SKILL.md: a skill is a folder (skills/<name>/SKILL.md), not a file"),
      fix: expect.stringContaining("Move it to skills/<name>/SKILL.md"),
    });
    await expect(buildAgent(releaseAgent({ "skills/deploy.md": "---\ndescription: Deploy.\n---\nSteps.\n" }))).rejects.toMatchObject({
      code: "AL_ERR_SKILL_DEFINITION",
      message: expect.stringContaining("skills/deploy.md: a skill is a folder"),
    });
    const linked = releaseAgent();
    symlinkSync(join(linked, "skills/release-notes"), join(linked, "skills/notes"));
    await expect(buildAgent(linked)).rejects.toMatchObject({ code: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining("skills/notes is a symbolic link") });
    const documented = await buildAgent(releaseAgent({ "skills/README.md": "# Our skills\n", "skills/.gitkeep": "" }));
    expect(documented.manifest.skills.map((skill) => skill.name)).toEqual(["release-notes"]);
  });

  it("lists the compact catalog in the context, and load_skill puts the body in and activates its tool", async () => {
    const { runtime, log, types } = await startAgent(releaseAgent(), [
      { toolCalls: [{ name: "publish_notes", input: { value: "too early" } }] },
      { toolCalls: [{ name: "load_skill", input: { name: "release-notes" } }] },
      { toolCalls: [{ name: "publish_notes", input: { value: "v1.2" } }] },
      { text: "published" },
    ]);
    const result = await runtime.run({ message: "ship it" });
    expect(result.status).toBe("completed");
    const context = log.contexts[0]!;
    expect(context.instructions).toContain("## Skills");
    expect(context.instructions).toContain("- release-notes: Write release notes from merged pull requests.");
    expect(context.instructions).not.toContain("Collect the merged pull requests");
    // Before the skill is loaded its tool is not offered.
    expect(log.outcomes[0]!.outcome).toMatchObject({ isError: true, output: { error: expect.stringContaining('available only while a skill that names it is active') } });
    expect(log.outcomes[1]!.outcome).toMatchObject({
      status: "completed",
      output: { name: "release-notes", instructions: expect.stringContaining("Collect the merged pull requests"), resources: ["/skills/release-notes/references/style.md"], activatedTools: ["publish_notes"] },
    });
    // Offered from the model call after load_skill on, not before.
    expect(log.offeredPerCall[1]).not.toContain("publish_notes");
    expect(log.offeredPerCall[2]).toContain("publish_notes");
    expect(log.outcomes[2]!.outcome).toEqual({ status: "completed", output: { published: "v1.2" }, isError: false });
    expect(await types(result.runId)).toContain("skill.loaded");
  });

  it("keeps a loaded skill active across a pause: the resumed turn has its body and its tool", async () => {
    const approvalTool = toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Check first."),` });
    const { runtime, log } = await startAgent(releaseAgent({ "tools/confirm.ts": approvalTool }), [
      { toolCalls: [{ name: "load_skill", input: { name: "release-notes" } }] },
      { toolCalls: [{ name: "confirm", input: { value: "go" } }] },
      { toolCalls: [{ name: "publish_notes", input: { value: "v2" } }] },
      { text: "done" },
    ]);
    const paused = await runtime.run({ message: "ship" });
    expect(paused.status).toBe("waiting_approval");
    const resumed = await runtime.approve(paused.runId);
    expect(resumed.status).toBe("completed");
    const resumedContext = log.contexts[1]!;
    expect(resumedContext.instructions).toContain("## Active skill: release-notes");
    expect(resumedContext.instructions).toContain("Publish with publish_notes.");
    expect(resumedContext.tools.map((tool) => tool.name)).toContain("publish_notes");
    expect(log.outcomes.at(-1)!.outcome).toEqual({ status: "completed", output: { published: "v2" }, isError: false });
  });

  it("answers an unknown skill name with a recoverable error", async () => {
    const { runtime, log } = await startAgent(releaseAgent(), [{ toolCalls: [{ name: "load_skill", input: { name: "nope" } }] }, { text: "ok" }]);
    expect((await runtime.run({ message: "x" })).status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toMatchObject({ isError: true, output: { code: "AL_ERR_SKILL_NOT_FOUND" } });
  });

  it("lists under unavailableTools, not activatedTools, a tool the host disabled or cannot run, so the model is not sent to call it", async () => {
    const skill = "---\ndescription: Write release notes.\ntools: [publish_notes, write, bash]\n---\n1. Write them.\n";
    const { runtime, log } = await startAgent(releaseAgent({ "skills/release-notes/SKILL.md": skill }), [{ toolCalls: [{ name: "load_skill", input: { name: "release-notes" } }] }, { text: "ok" }], {
      coreToolPolicy: { write: "disabled" },
    });
    expect((await runtime.run({ message: "ship" })).status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toMatchObject({ status: "completed", output: { activatedTools: ["publish_notes"], unavailableTools: ["write", "bash"] } });
    expect(log.offeredPerCall[1]).toContain("publish_notes");
    expect(log.offeredPerCall[1]).not.toContain("write");
  });

  it("reads skill files under /skills and refuses writes when self-improvement is off", async () => {
    const state = new InMemoryStateAdapter();
    const { runtime, log } = await startAgent(releaseAgent(), [
      { toolCalls: [{ name: "read", input: { path: "/skills/release-notes/references/style.md" } }] },
      { toolCalls: [{ name: "write", input: { path: "/skills/release-notes/SKILL.md", content: "---\ndescription: x\n---\n" } }] },
      { text: "ok" },
    ], { state, sandbox: fakeSandboxAdapter() });
    expect((await runtime.run({ message: "x" })).status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toMatchObject({ output: { content: "Use past tense." } });
    expect(log.outcomes[1]!.outcome).toMatchObject({ isError: true, output: { code: "AL_ERR_SKILL_READ_ONLY", error: expect.stringContaining("selfImprovement") } });
    expect(await state.listSkills(runtime.manifest.agent.id)).toEqual([]);
  });
});

/** The file tools need a sandbox adapter to be offered; these tests touch only /skills. */
function fakeSandboxAdapter() {
  return {
    name: "unused",
    async acquire() {
      throw new Error("no sandbox in this test");
    },
    async release() {},
  } as never;
}
