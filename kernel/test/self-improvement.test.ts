import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource, writeFiles } from "./support/agent-folder.js";
import { type CompletedOutcome, outputOf } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";

const agent = (policy: string) => `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "learner", model: "test/model", instructions: "Learn.", selfImprovement: ${policy} });
`;
const seed = (description: string, body: string) => `---\ndescription: ${description}\n---\n${body}\n`;

/** A tool that authors skills through ctx.selfImprovement. */
const LEARN = toolSource({
  upFront: true,
  schema: `{ type: "object", properties: {}, additionalProperties: false }`,
  execute: `
    const api = ctx.selfImprovement;
    if (!api) return { error: "no selfImprovement" };
    const created = await api.create({ name: "deploy-checklist", description: "Check a deploy.", body: "1. Run the smoke tests.", files: { "references/hosts.md": "web-1" } });
    const updated = await api.update({ name: "tweaked", body: "The agent's better procedure." });
    return { created, updated, names: (await api.list()).map((skill) => skill.name) };`,
});

function learner(policy = "{ writable: true }") {
  return agentFolder({
    "agent.ts": agent(policy),
    "skills/pristine/SKILL.md": seed("Left as seeded.", "Seed one."),
    "skills/tweaked/SKILL.md": seed("Changed by the agent.", "Seed one."),
    "tools/learn.ts": LEARN,
  });
}

describe("self-improvement", () => {
  it("seeds the store, lets the agent create and edit skills (file tools and ctx.selfImprovement), and records each change with digests", async () => {
    const state = new InMemoryStateAdapter();
    const dir = learner();
    const { runtime, log, events } = await startAgent(dir, [
      { toolCalls: [{ name: "learn", input: {} }] },
      { toolCalls: [{ name: "write", input: { path: "/skills/notes/SKILL.md", content: seed("Take notes.", "Write it down.") } }] },
      { toolCalls: [{ name: "edit", input: { path: "/skills/notes/SKILL.md", oldText: "Write it down.", newText: "Write it down twice." } }] },
      { text: "learned" },
    ], { state });
    const result = await runtime.run({ message: "learn" });
    expect(result.status).toBe("completed");
    const learned = log.outcomes[0]!.outcome as CompletedOutcome<{ created: { before: null; after: string }; updated: { before: string; after: string }; names: string[] }>;
    expect(learned.output.created).toMatchObject({ name: "deploy-checklist", before: null, after: expect.stringMatching(/^sha256:/) });
    expect(learned.output.updated.before).not.toBe(learned.output.updated.after);
    expect(learned.output.names).toEqual(["deploy-checklist", "pristine", "tweaked"]);

    const recorded = await events(result.runId);
    expect(recorded.filter((event) => event.type === "skill.seeded").map((event) => event.data.name)).toEqual(["pristine", "tweaked"]);
    const changes = recorded.filter((event) => event.type === "skill.changed").map((event) => [event.data.name, event.data.before === null, typeof event.data.after]);
    expect(changes).toEqual([["deploy-checklist", true, "string"], ["tweaked", false, "string"], ["notes", true, "string"], ["notes", false, "string"]]);
    expect((await state.getSkill("learner", "notes"))?.files["SKILL.md"]).toContain("Write it down twice.");
    expect((await state.getSkill("learner", "deploy-checklist"))?.files["references/hosts.md"]).toBe("web-1");
    expect((await state.getSkill("learner", "tweaked"))?.changedBy).toBe("agent");
  });

  it("on redeploy upgrades a skill nobody changed and keeps a changed one, recording the conflict", async () => {
    const state = new InMemoryStateAdapter();
    const dir = learner();
    const first = await startAgent(dir, [{ toolCalls: [{ name: "learn", input: {} }] }, { text: "ok" }], { state });
    await first.runtime.run({ message: "learn" });

    writeFiles(dir, { "skills/pristine/SKILL.md": seed("Left as seeded.", "Seed two."), "skills/tweaked/SKILL.md": seed("Changed by the agent.", "Seed two.") });
    const second = await startAgent(dir, [{ text: "redeployed" }], { state });
    expect(second.runtime.manifest.agentRevision).not.toBe(first.runtime.manifest.agentRevision);
    const run = await second.runtime.run({ message: "hello" });
    const types = await second.types(run.runId);
    expect(types).toContain("skill.upgraded");
    expect(types).toContain("skill.seed_conflict");

    const pristine = await state.getSkill("learner", "pristine");
    expect(pristine).toMatchObject({ changedBy: "seed", conflict: null, seedRevision: second.runtime.manifest.agentRevision });
    expect(pristine?.files["SKILL.md"]).toContain("Seed two.");
    const tweaked = await state.getSkill("learner", "tweaked");
    expect(tweaked?.files["SKILL.md"]).toContain("The agent's better procedure.");
    expect(tweaked?.conflict).toMatchObject({ seedRevision: second.runtime.manifest.agentRevision, seedDigest: second.runtime.manifest.skills.find((skill) => skill.name === "tweaked")!.digest });
    expect(await state.getSkill("learner", "deploy-checklist")).toBeDefined();

    // A third process on the same revision finds nothing more to do.
    const third = await startAgent(dir, [{ text: "again" }], { state });
    const again = await third.runtime.run({ message: "hello" });
    expect((await third.types(again.runId)).filter((type) => type.startsWith("skill."))).toEqual([]);
  });

  it("loads a skill the agent wrote whose tool a later build dropped, telling the model, instead of failing the run", async () => {
    const state = new InMemoryStateAdapter();
    const dir = learner();
    writeFiles(dir, { "tools/lookup.ts": toolSource({ extra: 'capability: { visibility: "skill" },' }) });
    const skill = `---\ndescription: Look things up.\ntools: [lookup]\n---\nUse lookup.\n`;
    const first = await startAgent(dir, [{ toolCalls: [{ name: "write", input: { path: "/skills/research/SKILL.md", content: skill } }] }, { text: "written" }], { state });
    expect((await first.runtime.run({ message: "learn" })).status).toBe("completed");

    // The next build has no lookup tool; the agent's skill still names it.
    rmSync(join(dir, "tools/lookup.ts"));
    const second = await startAgent(dir, [{ toolCalls: [{ name: "load_skill", input: { name: "research" } }] }, { text: "loaded" }], { state });
    const run = await second.runtime.run({ message: "research" });
    expect(run.status).toBe("completed");
    expect(outputOf(second.log.outcomes[0]!.outcome)).toMatchObject({ name: "research", activatedTools: [], unavailableTools: ["lookup"] });
  });

  it("with writable: false offers no ctx.selfImprovement and leaves the store untouched", async () => {
    const state = new InMemoryStateAdapter();
    const { runtime, log } = await startAgent(learner("{ writable: false }"), [{ toolCalls: [{ name: "learn", input: {} }] }, { text: "ok" }], { state });
    await runtime.run({ message: "learn" });
    expect(log.outcomes[0]!.outcome).toMatchObject({ output: { error: "no selfImprovement" } });
    expect(await state.listSkills("learner")).toEqual([]);
  });

  it("with writeApproval pauses each write for an approval bound to its exact content", async () => {
    const state = new InMemoryStateAdapter();
    const content = seed("Take notes.", "Write it down.");
    const { runtime, events } = await startAgent(learner("{ writable: true, writeApproval: true }"), [
      { toolCalls: [{ name: "write", input: { path: "/skills/notes/SKILL.md", content } }] },
      { toolCalls: [{ name: "learn", input: {} }] },
      { text: "done" },
    ], { state });
    const paused = await runtime.run({ message: "learn" });
    expect(paused.status).toBe("waiting_approval");
    const asked = (await events(paused.runId)).find((event) => event.type === "approval.requested")!;
    expect(asked.data).toMatchObject({ toolName: "write", reason: expect.stringContaining("create /skills/notes/SKILL.md"), skillWrite: { name: "notes", path: "SKILL.md", before: null, after: expect.stringMatching(/^sha256:/) } });
    expect(await state.getSkill("learner", "notes")).toBeUndefined();

    // The learn tool makes two writes: each asks for its own approval.
    const second = await runtime.approve(paused.runId);
    expect(second.status).toBe("waiting_approval");
    expect((await state.getSkill("learner", "notes"))?.files["SKILL.md"]).toBe(content);
    const third = await runtime.approve(paused.runId);
    expect(third.status).toBe("waiting_approval");
    expect(await state.getSkill("learner", "deploy-checklist")).toBeDefined();
    const done = await runtime.approve(paused.runId);
    expect(done.error?.message ?? "").toBe("");
    expect(done.status).toBe("completed");
    expect((await state.getSkill("learner", "tweaked"))?.changedBy).toBe("agent");
    const requests = (await events(paused.runId)).filter((event) => event.type === "approval.requested");
    const writes = requests.map((event) => (event.data.skillWrite as { name: string }).name);
    expect(writes).toEqual(["notes", "deploy-checklist", "tweaked"]);
    // Each request shows the text the write puts in the skill (the files it adds or changes), not only digests.
    const shown = requests.map((event) => (event.data.skillWrite as { proposed: unknown }).proposed);
    expect(shown[0]).toEqual({ files: { "SKILL.md": content }, removed: [], bytes: Buffer.byteLength(content), truncated: false });
    expect(shown[1]).toMatchObject({ files: { "SKILL.md": expect.stringContaining("1. Run the smoke tests."), "references/hosts.md": "web-1" }, removed: [], truncated: false });
    expect(shown[2]).toMatchObject({ files: { "SKILL.md": expect.stringContaining("The agent's better procedure.") }, truncated: false });
    expect(Object.keys((shown[2] as { files: object }).files)).toEqual(["SKILL.md"]);
  });

  it("with writeApproval shows at most 16 KiB of a large write's text, saying it was cut and how long it is", async () => {
    // 3-byte characters: the cut must fall between them.
    const body = "1. Send every invoice total to IBAN DE00 1234 5678.\n" + "€".repeat(8000);
    const big = toolSource({ upFront: true, schema: `{ type: "object" }`, execute: `return await ctx.selfImprovement.create({ name: "wire-money", description: "Pay invoices.", body: ${JSON.stringify(body)} });` });
    const { runtime, events } = await startAgent(agentFolder({ "agent.ts": agent("{ writable: true, writeApproval: true }"), "tools/big.ts": big }), [{ toolCalls: [{ name: "big", input: {} }] }, { text: "done" }]);
    const paused = await runtime.run({ message: "learn" });
    expect(paused.status).toBe("waiting_approval");
    const asked = (await events(paused.runId)).find((event) => event.type === "approval.requested")!;
    const { proposed, binding } = asked.data.skillWrite as { proposed: { files: Record<string, string>; bytes: number; truncated: boolean }; binding: string };
    const shownText = proposed.files["SKILL.md"]!;
    expect(shownText).toContain("IBAN DE00 1234 5678");
    expect(proposed.truncated).toBe(true);
    expect(proposed.bytes).toBeGreaterThan(24_000);
    expect(Buffer.byteLength(shownText)).toBeLessThanOrEqual(16 * 1024);
    expect(Buffer.byteLength(shownText)).toBeGreaterThan(16 * 1024 - 3);
    expect(shownText.endsWith("€")).toBe(true);
    expect(binding).toEqual(expect.any(String));
  });
});

describe("ctx.selfImprovement drafts", () => {
  /** Runs `body` (the tool's code, `api` = ctx.selfImprovement) once, returning its result or error. */
  async function withApi(body: string, files: Record<string, string> = {}) {
    const state = new InMemoryStateAdapter();
    const tool = toolSource({ upFront: true, schema: `{ type: "object" }`, execute: `const api = ctx.selfImprovement; try { return { ok: await (async () => { ${body} })() }; } catch (error) { return { error: error.code, message: error.message }; }` });
    const dir = agentFolder({ "agent.ts": agent("{ writable: true }"), "tools/author.ts": tool, ...files });
    const { runtime, log } = await startAgent(dir, [{ toolCalls: [{ name: "author", input: {} }] }, { text: "done" }], { state });
    await runtime.run({ message: "author" });
    return { output: outputOf(log.outcomes[0]!.outcome) as { ok?: unknown; error?: string; message?: string }, state };
  }

  it("keep a body that starts with its own --- block whole, instead of reading it as front matter", async () => {
    const body = "---\nSection A\n---\n\n# Release steps\n\n1. Tag.\n";
    const { state } = await withApi(`return api.create({ name: "release", description: "Release.", body: ${JSON.stringify(body)}, tools: ["bash"] });`);
    const skill = await state.getSkill("learner", "release");
    expect(skill?.files["SKILL.md"]).toContain(body);
    expect(skill?.files["SKILL.md"]).toMatch(/^---\ndescription: Release\.\ntools:\n {2}- bash\n---\n/);
  });

  it("keep the file's other front-matter keys on a body-only update", async () => {
    const seeded = `---\ndescription: Kept.\nlicense: MIT\nmetadata:\n  owner: ops\n---\nSeed.\n`;
    const { state } = await withApi(`return api.update({ name: "guide", body: "Better." });`, { "skills/guide/SKILL.md": seeded });
    const file = (await state.getSkill("learner", "guide"))?.files["SKILL.md"] ?? "";
    expect(file).toContain("license: MIT");
    expect(file).toContain("owner: ops");
    expect(file).toContain("description: Kept.");
    expect(file).toContain("Better.");
  });

  it("refuse a field no draft has, and a create without its body, naming them", async () => {
    const unknown = await withApi(`return api.update({ name: "guide", descripton: "typo" });`, { "skills/guide/SKILL.md": "---\ndescription: Kept.\n---\nSeed.\n" });
    expect(unknown.output).toMatchObject({ error: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining("selfImprovement.update: unknown field descripton") });
    const missing = await withApi(`return api.create({ name: "x", description: "X." });`);
    expect(missing.output).toMatchObject({ error: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining("selfImprovement.create: body must be a string") });
  });

  it("refuse files that are not an object of resource paths to text, saying how to give them, and store nothing", async () => {
    const create = (files: string) => withApi(`return api.create({ name: "alpha", description: "A.", body: "do a", files: ${files} });`);
    for (const [files, problem] of [
      [`"abc"`, "files must be an object of resource paths, not a string"],
      [`["a", "b"]`, "files must be an object of resource paths, not a list"],
      [`{ "notes.md": 42 }`, 'files["notes.md"] must be text, not a number'],
    ] as const) {
      const { output, state } = await create(files);
      expect(output, files).toMatchObject({ error: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining(`selfImprovement.create: ${problem}`) });
      expect(output.message, files).toContain('fix: Pass files: { "references/x.md": "..." }');
      expect(await state.getSkill("learner", "alpha"), files).toBeUndefined();
    }
    const update = await withApi(`return api.update({ name: "guide", files: "abc" });`, { "skills/guide/SKILL.md": "---\ndescription: Kept.\n---\nSeed.\n" });
    expect(update.output).toMatchObject({ error: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining("selfImprovement.update: files must be an object of resource paths, not a string") });
    expect(Object.keys((await update.state.getSkill("learner", "guide"))?.files ?? {})).toEqual(["SKILL.md"]);
  });
});

describe("ctx.selfImprovement resource paths", () => {
  it("refuse a path with a control character, which the file tools could neither read nor delete, naming the path and the rule, and store nothing", async () => {
    const state = new InMemoryStateAdapter();
    const calls = ['api.create({ name: "alpha", description: "A.", body: "do a", files: { "refs/a\\nb.md": "x" } })', 'api.update({ name: "guide", files: { "refs/a\\u2028b.md": "x", "tab\\there.md": "y" } })'];
    const tool = toolSource({ upFront: true, schema: `{ type: "object" }`, execute: `const api = ctx.selfImprovement; const out = []; for (const call of [${calls.map((call) => `() => ${call}`).join(", ")}]) { try { out.push({ ok: await call() }); } catch (error) { out.push({ error: error.code, message: error.message }); } } return out;` });
    const dir = agentFolder({ "agent.ts": agent("{ writable: true }"), "tools/author.ts": tool, "skills/guide/SKILL.md": "---\ndescription: Kept.\n---\nSeed.\n" });
    const { runtime, log } = await startAgent(dir, [{ toolCalls: [{ name: "author", input: {} }] }, { text: "done" }], { state });
    await runtime.run({ message: "author" });
    const [created, updated] = outputOf(log.outcomes[0]!.outcome) as Array<{ error?: string; message?: string }>;
    expect(created).toMatchObject({ error: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining('skill file "refs/a\\nb.md" is not a resource path: it holds a control character') });
    expect(updated).toMatchObject({ error: "AL_ERR_SKILL_DEFINITION", message: expect.stringContaining('skill file "refs/a\u2028b.md" is not a resource path: it holds a control character') });
    expect(await state.getSkill("learner", "alpha")).toBeUndefined();
    expect(Object.keys((await state.getSkill("learner", "guide"))?.files ?? {})).toEqual(["SKILL.md"]);
  });
});

describe("a skill store", () => {
  it("refuses a record with a resource path holding a control character, naming the path and the rule", async () => {
    const files = { "SKILL.md": "---\ndescription: A.\n---\nDo a.\n", "refs/a\u0085b.md": "x" };
    const record = { agentId: "learner", name: "alpha", files, digest: "sha256:x", seedDigest: null, seedRevision: null, changedBy: "agent" as const, conflict: null, updatedAt: new Date().toISOString() };
    await expect(new InMemoryStateAdapter().putSkill(record, { expectedDigest: null })).rejects.toMatchObject({
      code: "AL_ERR_STATE_INPUT_INVALID",
      message: expect.stringContaining(`file path "refs/a\u0085b.md" is not a relative path inside the skill folder: it holds a control character`),
    });
  });
});

describe("a seeded skill the agent deleted", () => {
  it("stays deleted when the host starts again, instead of being seeded anew", async () => {
    const state = new InMemoryStateAdapter();
    const forget = toolSource({ upFront: true, schema: `{ type: "object" }`, execute: `return await ctx.selfImprovement.delete("pristine");` });
    const dir = agentFolder({ "agent.ts": agent("{ writable: true }"), "skills/pristine/SKILL.md": seed("Left as seeded.", "Seed one."), "tools/forget.ts": forget });
    const first = await startAgent(dir, [{ toolCalls: [{ name: "forget", input: {} }] }, { text: "forgotten" }], { state });
    expect((await first.runtime.run({ message: "forget it" })).status).toBe("completed");
    expect(await state.getSkill("learner", "pristine")).toBeUndefined();

    // A new process on the same store (a restart, another replica).
    const second = await startAgent(dir, [{ text: "hello" }], { state });
    const run = await second.runtime.run({ message: "hello" });
    expect(await second.types(run.runId)).not.toContain("skill.seeded");
    expect(await state.getSkill("learner", "pristine")).toBeUndefined();
  });

  it("stays deleted when the process dies right after the store deleted it", async () => {
    // The store deletes, then the process is gone before anything after the delete runs.
    class DiesAfterDelete extends InMemoryStateAdapter {
      override async deleteSkill(...args: Parameters<InMemoryStateAdapter["deleteSkill"]>): Promise<boolean> {
        await super.deleteSkill(...args);
        throw new Error("process killed");
      }
    }
    const state = new DiesAfterDelete();
    const forget = toolSource({ upFront: true, schema: `{ type: "object" }`, execute: `return await ctx.selfImprovement.delete("pristine");` });
    const dir = agentFolder({ "agent.ts": agent("{ writable: true }"), "skills/pristine/SKILL.md": seed("Left as seeded.", "Seed one."), "tools/forget.ts": forget });
    const first = await startAgent(dir, [{ toolCalls: [{ name: "forget", input: {} }] }, { text: "forgotten" }], { state });
    await first.runtime.run({ message: "forget it" });
    expect(await state.getSkill("learner", "pristine")).toBeUndefined();

    const second = await startAgent(dir, [{ text: "hello" }], { state });
    await second.runtime.run({ message: "hello" });
    expect(await state.getSkill("learner", "pristine")).toBeUndefined();
  });

  it("is not remembered as deleted when its deletion lost to a concurrent change", async () => {
    class ConcurrentlyChanged extends InMemoryStateAdapter {
      override async deleteSkill(): Promise<boolean> {
        return false;
      }
    }
    const state = new ConcurrentlyChanged();
    const forget = toolSource({ upFront: true, schema: `{ type: "object" }`, execute: `try { return await ctx.selfImprovement.delete("pristine"); } catch (error) { return { error: error.code }; }` });
    const dir = agentFolder({ "agent.ts": agent("{ writable: true }"), "skills/pristine/SKILL.md": seed("Left as seeded.", "Seed one."), "tools/forget.ts": forget });
    const { runtime, log } = await startAgent(dir, [{ toolCalls: [{ name: "forget", input: {} }] }, { text: "kept" }], { state });
    await runtime.run({ message: "forget it" });
    expect(outputOf(log.outcomes[0]!.outcome)).toMatchObject({ error: expect.stringMatching(/^AL_ERR_/) });
    expect((await state.getSetting("skills.removedSeed:learner:pristine")) ?? null).toBeNull();
  });

  it("is seeded again by a start after `skills reset` put it back and the agent's copy is lost", async () => {
    const state = new InMemoryStateAdapter();
    const forget = toolSource({ upFront: true, schema: `{ type: "object" }`, execute: `return await ctx.selfImprovement.delete("pristine");` });
    const dir = agentFolder({ "agent.ts": agent("{ writable: true }"), "skills/pristine/SKILL.md": seed("Left as seeded.", "Seed one."), "tools/forget.ts": forget });
    const first = await startAgent(dir, [{ toolCalls: [{ name: "forget", input: {} }] }, { text: "forgotten" }], { state });
    await first.runtime.run({ message: "forget it" });
    expect(await state.getSkill("learner", "pristine")).toBeUndefined();

    // The operator resets it: the seed is back, and the deletion is no longer remembered.
    await first.runtime.skills().reset("pristine");
    expect((await state.getSkill("learner", "pristine"))?.changedBy).toBe("seed");
    await state.deleteSkill("learner", "pristine", { expectedDigest: (await state.getSkill("learner", "pristine"))!.digest });

    const second = await startAgent(dir, [{ text: "hello" }], { state });
    const run = await second.runtime.run({ message: "hello" });
    expect(await second.types(run.runId)).toContain("skill.seeded");
    expect((await state.getSkill("learner", "pristine"))?.changedBy).toBe("seed");
  });
});
