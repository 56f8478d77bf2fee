import { existsSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness } from "@assemblyline-agents/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

/** A publish tool that needs approval, offered up front; `version` shows which build executed it. */
const publishTool = (version: string, schema = `{ type: "object", properties: { note: { type: "string" } }, required: ["note"], additionalProperties: false }`) =>
  `import { defineTool, approvalRequired } from "@assemblyline-agents/core";
export default defineTool({
  description: "Publish a note.",
  inputSchema: ${schema},
  defaultEnabled: true,
  needsApproval: approvalRequired("Publishing is visible."),
  async execute(input) { return { published: input.note ?? input.text, by: "${version}" }; },
});
`;

const script = { turns: [{ toolCalls: [{ name: "publish", input: { note: "milk" } }] }, { text: "done" }] };

const opened: OpenEveRuntime[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((runtime) => runtime.close()));
});

async function host(dir: string, state: InMemoryStateAdapter, turns: typeof script = script) {
  const { artifactRoot } = await buildAgent(dir);
  const bundle = await loadRuntimeBundle(artifactRoot);
  const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: scriptedHarness(turns), logger: noopLogger() });
  opened.push(runtime);
  return runtime;
}

async function pausedRun(tool = publishTool("v1")) {
  const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/publish.ts": tool });
  const state = new InMemoryStateAdapter();
  const first = await host(dir, state);
  const paused = await first.run({ message: "publish milk" });
  expect(paused.status).toBe("waiting_approval");
  return { dir, state, runId: paused.runId, revision: first.manifest.agentRevision };
}

/** As if the runtimes that served `revision` had stopped marking its copy two hours ago. */
function markedLongAgo(dir: string, revision: string): void {
  const then = new Date(Date.now() - 2 * 60 * 60_000);
  utimesSync(join(dir, ".assembly-line", "revisions", revision), then, then);
}

const publishedBy = async (runtime: OpenEveRuntime, runId: string) =>
  (await runtime.listEvents(runId)).find((event) => event.type === "tool.completed")?.data;

describe("runs pinned to their revision", () => {
  it("approves a run paused under an earlier build on that build, after the tool changed and the folder was rebuilt", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2"));
    const rebuilt = await host(dir, state);
    expect(rebuilt.manifest.agentRevision).not.toBe(revision);

    const done = await rebuilt.approve(runId);
    expect(done.status).toBe("completed");
    expect(await publishedBy(rebuilt, runId)).toMatchObject({ output: { published: "milk", by: "v1" } });
    // Brand-new runs take the new build.
    const fresh = await rebuilt.run({ message: "again" });
    await rebuilt.approve(fresh.runId);
    expect(await publishedBy(rebuilt, fresh.runId)).toMatchObject({ output: { by: "v2" } });
  });

  it("hands the events of a run going on under an earlier build to that build's hooks/, not the rebuilt folder's", async () => {
    const seen: Array<{ by: string; type: string; revision: string }> = [];
    (globalThis as { revisionHookSeen?: typeof seen }).revisionHookSeen = seen;
    const hook = (version: string) => `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { "*"(event, ctx) { globalThis.revisionHookSeen.push({ by: "${version}", type: event.type, revision: ctx.agentRevision }); } } });
`;
    try {
      const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/publish.ts": publishTool("v1"), "hooks/log.ts": hook("v1") });
      const state = new InMemoryStateAdapter();
      const first = await host(dir, state);
      const paused = await first.run({ message: "publish milk" });
      expect(paused.status).toBe("waiting_approval");
      writeFileSync(join(dir, "hooks/log.ts"), hook("v2"));
      const rebuilt = await host(dir, state);
      seen.length = 0;

      expect((await rebuilt.approve(paused.runId)).status).toBe("completed");
      expect(seen.map((entry) => entry.type)).toContain("run.completed");
      expect(new Set(seen.map(({ by, revision }) => `${by} ${revision}`))).toEqual(new Set([`v1 ${first.manifest.agentRevision}`]));
      // A run that starts now is the rebuilt folder's, hooks too.
      seen.length = 0;
      await rebuilt.run({ message: "again" });
      expect(new Set(seen.map(({ by }) => by))).toEqual(new Set(["v2"]));
    } finally {
      delete (globalThis as { revisionHookSeen?: unknown }).revisionHookSeen;
    }
  });

  it("approves a run paused under an earlier build when the host's coreToolPolicy gates a tool only the new build has", async () => {
    const { dir, state, runId } = await pausedRun();
    writeFileSync(join(dir, "tools/archive.ts"), publishTool("v2").replace("Publish a note.", "Archive a note."));
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    const rebuilt = new OpenEveRuntime({ ...bundle, state, agentHarness: scriptedHarness(script), logger: noopLogger(), coreToolPolicy: { archive: "approval" } });
    // The policy is checked against the build the runtime serves; the earlier build runs on without archive.
    expect((await rebuilt.approve(runId)).status).toBe("completed");
  });

  it("runs the subagents a run spawns after its approval on its own build, when the rebuilt folder dropped them", async () => {
    const worker = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Does the work." });\n`;
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/publish.ts": publishTool("v1"), "subagents/worker/agent.ts": worker });
    const spawning = {
      turns: [{ toolCalls: [{ name: "publish", input: { note: "milk" } }] }, { toolCalls: [{ name: "spawn_subagent", input: { name: "worker", task: "Check it." } }] }, { text: "done" }],
      subagents: { worker: { turns: [{ text: "checked" }] } },
    };
    const state = new InMemoryStateAdapter();
    const start = async () => new OpenEveRuntime({ ...(await loadRuntimeBundle((await buildAgent(dir)).artifactRoot)), state, agentHarness: scriptedHarness(spawning), logger: noopLogger() });
    const paused = await (await start()).run({ message: "publish, then check" });
    expect(paused.status).toBe("waiting_approval");

    rmSync(join(dir, "subagents"), { recursive: true });
    const rebuilt = await start();
    expect(rebuilt.profiles.subagents.size).toBe(0);
    const done = await rebuilt.approve(paused.runId);
    expect(done).toMatchObject({ status: "completed", response: { text: "done" } });
    const child = (await rebuilt.listEvents(paused.runId)).find((event) => event.type === "subagent.completed");
    expect(child?.data).toMatchObject({ subagent: "worker", status: "completed", output: "checked" });
  });

  it("keeps the rebuilt folder's seeded skills when a run paused under an earlier build is approved on that build", async () => {
    const learner = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "learner", model: "test/model", instructions: "Learn.", selfImprovement: { writable: true } });\n`;
    const dir = agentFolder({ "agent.ts": learner, "tools/publish.ts": publishTool("v1"), "skills/guide/SKILL.md": "---\ndescription: Guide.\n---\nv1\n" });
    const state = new InMemoryStateAdapter();
    const paused = await (await host(dir, state)).run({ message: "publish milk" });
    expect(paused.status).toBe("waiting_approval");

    // The redeploy changes the seed nobody edited and seeds a new skill.
    writeFileSync(join(dir, "skills/guide/SKILL.md"), "---\ndescription: Guide.\n---\nv2\n");
    mkdirSync(join(dir, "skills/extra"));
    writeFileSync(join(dir, "skills/extra/SKILL.md"), "---\ndescription: Extra.\n---\nnew in v2\n");
    const rebuilt = await host(dir, state);
    expect((await rebuilt.run({ message: "again" })).status).toBe("waiting_approval");
    expect((await rebuilt.skills().get("guide"))?.body).toBe("v2\n");

    // The earlier build reads the store as it is: its seeds are no longer the truth.
    const before = (await rebuilt.listEvents(paused.runId)).length;
    expect((await rebuilt.approve(paused.runId)).status).toBe("completed");
    expect((await rebuilt.skills().get("guide"))?.body).toBe("v2\n");
    expect((await rebuilt.skills().get("extra"))?.body).toBe("new in v2\n");
    const resumedEvents = (await rebuilt.listEvents(paused.runId)).slice(before).map((event) => event.type);
    expect(resumedEvents.filter((type) => type.startsWith("skill."))).toEqual([]);
  });

  it("moves a paused run to the current build with migrateRun, recorded as run.migrated", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2"));
    const rebuilt = await host(dir, state);
    const moved = await rebuilt.migrateRun(runId, { actor: "ada" });
    expect(moved.status).toBe("waiting_approval");
    expect(await rebuilt.revisionOf(runId)).toBe(rebuilt.manifest.agentRevision);
    const migrated = (await rebuilt.listEvents(runId)).find((event) => event.type === "run.migrated");
    expect(migrated?.data).toEqual({ from: revision, to: rebuilt.manifest.agentRevision, actor: "ada" });

    await rebuilt.approve(runId);
    expect(await publishedBy(rebuilt, runId)).toMatchObject({ output: { by: "v2" } });
  });

  it("goes on with a migrated run on the build it moved to after the folder is reverted and rebuilt, and keeps that build", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    // The new build adds an archive tool the run calls after its publish is approved.
    const archiveTool = publishTool("v2").replace("Publish a note.", "Archive a note.");
    const twoTools = { turns: [{ toolCalls: [{ name: "publish", input: { note: "milk" } }] }, { toolCalls: [{ name: "archive", input: { note: "milk" } }] }, { text: "done" }] };
    writeFileSync(join(dir, "tools/archive.ts"), archiveTool);
    const withArchive = await host(dir, state, twoTools);
    await withArchive.migrateRun(runId);
    expect((await withArchive.approve(runId)).status).toBe("waiting_approval");
    expect((await withArchive.getRun(runId)).pendingApprovals?.map((call) => call.toolName)).toEqual(["archive"]);
    const moved = withArchive.manifest.agentRevision;
    await withArchive.close();

    rmSync(join(dir, "tools/archive.ts"));
    const reverted = await host(dir, state, twoTools);
    expect(reverted.manifest.agentRevision).toBe(revision);
    expect(await reverted.revisionOf(runId)).toBe(moved);
    markedLongAgo(dir, moved);
    expect(await reverted.pruneRevisions()).toEqual([]);

    const done = await reverted.approve(runId);
    expect(done.status).toBe("completed");
    const archived = (await reverted.listEvents(runId)).filter((event) => event.type === "tool.completed").map((event) => event.data);
    expect(archived).toEqual([expect.objectContaining({ toolName: "publish" }), expect.objectContaining({ toolName: "archive", output: { published: "milk", by: "v2" } })]);
  });

  it("starts the subagents a migrated run spawns on the build it moved to", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    // The new build adds a subagent the run spawns once its publish is approved.
    mkdirSync(join(dir, "subagents/helper"), { recursive: true });
    writeFileSync(join(dir, "subagents/helper/agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Helps." });\n`);
    const spawning = {
      turns: [{ toolCalls: [{ name: "publish", input: { note: "milk" } }] }, { toolCalls: [{ name: "spawn_subagent", input: { name: "helper", task: "help" } }] }, { text: "done" }],
      subagents: { helper: { turns: [{ text: "helped" }] } },
    };
    const withHelper = await host(dir, state, spawning as typeof script);
    const moved = withHelper.manifest.agentRevision;
    expect(moved).not.toBe(revision);
    await withHelper.migrateRun(runId);

    expect((await withHelper.approve(runId)).status).toBe("completed");
    const { runs: children } = await state.listRuns({ agentId: `${withHelper.manifest.agent.id}/helper` });
    expect(children.map((child) => [child.status, child.agentRevision])).toEqual([["completed", moved]]);
  });

  it("refuses to migrate when the pending tool is gone or its schema no longer fits the call, and leaves the run as it was", async () => {
    const { dir, state, runId } = await pausedRun();
    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2", `{ type: "object", properties: { text: { type: "string" } }, required: ["text"], additionalProperties: false }`));
    const renamedField = await host(dir, state);
    await expect(renamedField.migrateRun(runId)).rejects.toMatchObject({ code: "AL_ERR_RUN_MIGRATION", message: expect.stringMatching(/publish no longer matches the tool's input schema/) });

    rmSync(join(dir, "tools/publish.ts"));
    writeFileSync(join(dir, "tools/other.ts"), publishTool("v3"));
    const removed = await host(dir, state);
    await expect(removed.migrateRun(runId)).rejects.toMatchObject({ code: "AL_ERR_RUN_MIGRATION", message: expect.stringMatching(/to publish, which that revision no longer has/) });

    expect((await removed.listEvents(runId)).some((event) => event.type === "run.migrated")).toBe(false);
    const done = await removed.approve(runId);
    expect(done.status).toBe("completed");
    expect(await publishedBy(removed, runId)).toMatchObject({ output: { by: "v1" } });
  });

  it("keeps a build while an unfinished run needs it and prunes it once none does and no runtime marked it lately", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2"));
    const rebuilt = await host(dir, state);
    const kept = join(dir, ".assembly-line", "revisions");
    markedLongAgo(dir, revision);
    expect(await rebuilt.pruneRevisions()).toEqual([]);
    expect(readdirSync(kept).sort()).toEqual([revision, rebuilt.manifest.agentRevision].sort());

    await rebuilt.approve(runId);
    expect(await rebuilt.pruneRevisions()).toEqual([revision]);
    expect(readdirSync(kept)).toEqual([rebuilt.manifest.agentRevision]);
  });

  it("keeps a build a paused run in another state store needs when a build against this store prunes", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    // A build or a boot on the run's own store prunes, which holds the builds its unfinished runs need.
    await (await host(dir, state)).pruneRevisions();
    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2"));
    const otherStore = await host(dir, new InMemoryStateAdapter());
    markedLongAgo(dir, revision);
    expect(await otherStore.pruneRevisions()).toEqual([]);

    const own = await host(dir, state);
    expect((await own.approve(runId)).status).toBe("completed");
    expect(await publishedBy(own, runId)).toMatchObject({ output: { by: "v1" } });
    // The run that needed it is done: its own store lets it go.
    markedLongAgo(dir, revision);
    expect(await own.pruneRevisions()).toEqual([revision]);
  });

  it("keeps the build a live runtime serves, so a run it pauses after another process pruned can be approved after a restart", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/publish.ts": publishTool("v1") });
    const state = new InMemoryStateAdapter();
    // A dev server (or an old replica) is up on v1, with no unfinished run yet.
    const serving = await host(dir, state);
    const v1 = serving.manifest.agentRevision;
    // The author edits the tool; a command on the same folder and state builds and prunes.
    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2"));
    expect(await (await host(dir, state)).pruneRevisions()).toEqual([]);

    const paused = await serving.run({ message: "publish milk" });
    expect(paused.status).toBe("waiting_approval");
    const restarted = await host(dir, state);
    expect((await restarted.approve(paused.runId)).status).toBe("completed");
    expect(await publishedBy(restarted, paused.runId)).toMatchObject({ output: { by: "v1" } });

    // Once its runtime is closed and its last mark is old, nothing holds v1 any longer.
    await serving.close();
    markedLongAgo(dir, v1);
    expect(await restarted.pruneRevisions()).toEqual([v1]);
  });

  it("builds again over a kept copy that a stopped prune left half deleted, and a run paused under it is approved on it", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    const kept = join(dir, ".assembly-line", "revisions", revision);
    rmSync(join(kept, "manifest.json"));
    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2"));
    await host(dir, state);

    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v1"));
    const reverted = await host(dir, state);
    expect(reverted.manifest.agentRevision).toBe(revision);
    expect(existsSync(join(kept, "manifest.json"))).toBe(true);
    expect((await reverted.approve(runId)).status).toBe("completed");
    expect(await publishedBy(reverted, runId)).toMatchObject({ output: { by: "v1" } });
  });

  it("removes the aside copies a stopped build or prune left once they are old, and leaves a build writing one now alone", async () => {
    const { dir, state } = await pausedRun();
    const kept = join(dir, ".assembly-line", "revisions");
    const left = join(kept, "rev_left.1.1.tmp");
    const writing = join(kept, "rev_writing.2.2.tmp");
    for (const folder of [left, writing]) mkdirSync(join(folder, "src"), { recursive: true });
    const then = new Date(Date.now() - 2 * 60 * 60_000);
    utimesSync(left, then, then);
    await (await host(dir, state)).pruneRevisions();
    expect(existsSync(left)).toBe(false);
    expect(existsSync(writing)).toBe(true);
  });

  it("names the revision and the way out when the build a run needs is gone", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2"));
    const rebuilt = await host(dir, state);
    rmSync(join(dir, ".assembly-line", "revisions", revision), { recursive: true });
    await expect(rebuilt.approve(runId)).rejects.toMatchObject({ code: "AL_ERR_CONTINUATION_VERSION", message: expect.stringContaining(revision) });
    expect((await rebuilt.getRun(runId)).status).toBe("waiting_approval");
    expect(existsSync(join(dir, ".assembly-line", "revisions", rebuilt.manifest.agentRevision, "manifest.json"))).toBe(true);
  });
});
