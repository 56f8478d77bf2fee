import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness } from "@assemblyline-agents/runtime";
import { describe, expect, it, onTestFinished } from "vitest";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

const publishTool = `import { defineTool, approvalRequired } from "@assemblyline-agents/core";
export default defineTool({
  description: "Publish a note.",
  inputSchema: { type: "object", properties: { note: { type: "string" } }, required: ["note"], additionalProperties: false },
  defaultEnabled: true,
  needsApproval: approvalRequired("Publishing is visible."),
  async execute(input) { return { published: input.note }; },
});
`;

/** A hooks/ file that records which build handled each event, and fails on `note.left`. */
const hook = (version: string) => `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: {
  "*"(event, ctx) { globalThis.catchUpHookSeen.push({ by: "${version}", type: event.type, revision: ctx.agentRevision }); },
  "note.left"() { throw new Error("${version} cannot take notes"); },
} });
`;

const script = { turns: [{ toolCalls: [{ name: "publish", input: { note: "milk" } }] }, { text: "done" }] };

type Seen = { by: string; type: string; revision: string };

async function open(dir: string, state: InMemoryStateAdapter): Promise<OpenEveRuntime> {
  const runtime = new OpenEveRuntime({ ...(await loadRuntimeBundle((await buildAgent(dir)).artifactRoot)), state, agentHarness: scriptedHarness(script), logger: noopLogger() });
  onTestFinished(() => runtime.close());
  return runtime;
}

describe("observer catch-up of a run paused under an earlier build", () => {
  it("hands the events a crash left unobserved to that build's hooks/ with its revision, not to the rebuilt folder's", async () => {
    const seen: Seen[] = [];
    (globalThis as { catchUpHookSeen?: Seen[] }).catchUpHookSeen = seen;
    onTestFinished(() => void delete (globalThis as { catchUpHookSeen?: Seen[] }).catchUpHookSeen);
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/publish.ts": publishTool, "hooks/log.ts": hook("v1") });
    const state = new InMemoryStateAdapter();
    const first = await open(dir, state);
    const paused = await first.run({ message: "publish milk" });
    expect(paused.status).toBe("waiting_approval");
    const v1 = first.manifest.agentRevision;
    await first.close();
    // Recorded, and its process gone before any observer saw it.
    await state.appendEvents(paused.runId, [{ type: "note.left", data: {} }]);

    writeFileSync(join(dir, "hooks/log.ts"), hook("v2"));
    const rebuilt = await open(dir, state);
    expect(rebuilt.manifest.agentRevision).not.toBe(v1);
    seen.length = 0;

    expect(await rebuilt.catchUpObservers()).toBe(1);
    expect(seen.map(({ type }) => type)).toEqual(["note.left", "hook.failed"]);
    expect(new Set(seen.map(({ by, revision }) => `${by} ${revision}`))).toEqual(new Set([`v1 ${v1}`]));
    const failed = (await rebuilt.listEvents(paused.runId)).find((event) => event.type === "hook.failed");
    expect(failed?.data).toMatchObject({ eventType: "note.left", error: "v1 cannot take notes" });
    const run = await state.getRun(paused.runId);
    expect(run?.observedSeq).toBe(run?.lastSeq);
  });
});

describe("observer catch-up of a run finished under an earlier build", () => {
  /** A run completed under v1 with an event recorded after it that no observer saw, and the folder rebuilt as v2. */
  async function finishedUnderV1(): Promise<{ seen: Seen[]; runId: string; v1: string; artifactRoot: string; dir: string; state: InMemoryStateAdapter }> {
    const seen: Seen[] = [];
    (globalThis as { catchUpHookSeen?: Seen[] }).catchUpHookSeen = seen;
    onTestFinished(() => void delete (globalThis as { catchUpHookSeen?: Seen[] }).catchUpHookSeen);
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "hooks/log.ts": hook("v1") });
    const state = new InMemoryStateAdapter();
    const { artifactRoot } = await buildAgent(dir);
    const first = new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state, agentHarness: scriptedHarness({ turns: [{ text: "done" }] }), logger: noopLogger() });
    onTestFinished(() => first.close());
    const done = await first.run({ message: "hi" });
    expect(done.status).toBe("completed");
    const v1 = first.manifest.agentRevision;
    await first.close();
    await state.appendEvents(done.runId, [{ type: "note.taken", data: {} }]);
    writeFileSync(join(dir, "hooks/log.ts"), hook("v2"));
    return { seen, runId: done.runId, v1, artifactRoot, dir, state };
  }

  it("hands its missed events to the served build's hooks/ once its own build's copy is gone, instead of skipping it on every sweep", async () => {
    const { seen, runId, v1, artifactRoot, dir, state } = await finishedUnderV1();
    const rebuilt = await open(dir, state);
    // A copy no unfinished run needed is pruned; a fresh deploy image has only the build it serves.
    rmSync(join(artifactRoot, "revisions", v1), { recursive: true, force: true });
    seen.length = 0;

    expect(await rebuilt.catchUpObservers()).toBe(1);
    expect(seen).toEqual([{ by: "v2", type: "note.taken", revision: rebuilt.manifest.agentRevision }]);
    const run = await state.getRun(runId);
    expect(run?.observedSeq).toBe(run?.lastSeq);
    expect(await rebuilt.catchUpObservers()).toBe(0);
  });

  it("hands them to its own build's hooks/ while that copy is kept, and holds that copy for no finished run", async () => {
    const { seen, runId, v1, artifactRoot, dir, state } = await finishedUnderV1();
    const heldBy = join(artifactRoot, "revisions", v1, "held-by");
    const holdsOfRun = () => (existsSync(heldBy) ? readdirSync(heldBy) : []).filter((file) => Buffer.from(file, "base64url").toString("utf8") === runId);
    expect(holdsOfRun()).toEqual([]);
    const rebuilt = await open(dir, state);
    seen.length = 0;

    expect(await rebuilt.catchUpObservers()).toBe(1);
    expect(seen).toEqual([{ by: "v1", type: "note.taken", revision: v1 }]);
    // A finished run never goes on: its build stays free to prune.
    expect(holdsOfRun()).toEqual([]);
  });
});
