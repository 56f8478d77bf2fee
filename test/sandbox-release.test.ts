import { existsSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { SandboxAdapter } from "@assemblyline-agents/core";
import { LocalSandboxAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, type RuntimeBundle } from "@assemblyline-agents/runtime";

const work = mkdtempSync(join(tmpdir(), "al-sandbox-release-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** An agent that writes to /workspace, then asks approval for a tool that never touches the sandbox. */
async function agent(turns: unknown[]): Promise<RuntimeBundle> {
  const dir = mkdtempSync(join(work, "agent-"));
  mkdirSync(join(dir, "tools"));
  writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname });\n`);
  writeFileSync(
    join(dir, "tools/publish.ts"),
    `import { approvalRequired, defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Publish the report.",
  inputSchema: { type: "object", properties: {} },
  defaultEnabled: true,
  needsApproval: approvalRequired("Publishing is public."),
  async execute() { return { published: true }; },
});
`,
  );
  writeFileSync(join(dir, "script.json"), JSON.stringify({ turns }));
  return loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
}

/** The local sandbox, counting releases. */
function countingSandbox(root: string): { adapter: SandboxAdapter; released: string[]; local: LocalSandboxAdapter } {
  const local = new LocalSandboxAdapter({ root });
  const released: string[] = [];
  return {
    local,
    released,
    adapter: {
      name: "local",
      acquire: (key) => local.acquire(key),
      release: async (key) => {
        released.push(key);
        await local.release(key);
      },
    },
  };
}

describe("a run's sandbox is released when the run ends", () => {
  it("also when the run acquired it in an earlier drive, in another process, and ended without touching it again", async () => {
    const bundle = await agent([
      { toolCalls: [{ name: "write", input: { path: "/workspace/report.md", content: "draft" } }] },
      { toolCalls: [{ name: "publish", input: {} }] },
      { text: "published" },
    ]);
    const root = join(work, "sandboxes-1");
    const state = new InMemoryStateAdapter();
    // The first process writes the draft into the run's sandbox and pauses for approval.
    const first = countingSandbox(root);
    const one = new OpenEveRuntime({ ...bundle, state, sandbox: first.adapter, logger: noopLogger() });
    const paused = await one.run({ message: "write and publish" });
    expect(paused.status).toBe("waiting_approval");
    const folder = join(root, paused.runId);
    expect(existsSync(folder)).toBe(true);
    expect(first.released).toEqual([]);

    // Another process takes the approval; the rest of the run never touches the sandbox.
    const second = countingSandbox(root);
    const two = new OpenEveRuntime({ ...bundle, state, sandbox: second.adapter, logger: noopLogger() });
    const done = await two.approve(paused.runId);
    expect(done.status).toBe("completed");
    expect(second.released).toEqual([paused.runId]);
    expect(existsSync(folder)).toBe(false);
  });

  it("is not asked to release a sandbox a run that ended in one drive never acquired", async () => {
    const bundle = await agent([{ text: "nothing to do" }]);
    const sandbox = countingSandbox(join(work, "sandboxes-2"));
    const runtime = new OpenEveRuntime({ ...bundle, state: new InMemoryStateAdapter(), sandbox: sandbox.adapter, logger: noopLogger() });
    expect((await runtime.run({ message: "hi" })).status).toBe("completed");
    expect(sandbox.released).toEqual([]);
  });
});

describe("a finished run's sandbox that its process never released", () => {
  it("is released by releaseFinishedSandboxes; a paused run's, another agent's, one under a live lease and a key of no run are left", async () => {
    const bundle = await agent([
      { toolCalls: [{ name: "write", input: { path: "/workspace/report.md", content: "draft" } }] },
      { toolCalls: [{ name: "publish", input: {} }] },
      { text: "published" },
    ]);
    const root = join(work, "sandboxes-sweep");
    const state = new InMemoryStateAdapter();
    const local = new LocalSandboxAdapter({ root });
    // The process that ran them stopped before each release: its adapter never gets to release.
    const stopped: SandboxAdapter = { name: "local", acquire: (key) => local.acquire(key), release: async () => undefined };
    const first = new OpenEveRuntime({ ...bundle, state, sandbox: stopped, logger: noopLogger() });
    const finished = await first.run({ message: "write and publish" });
    expect((await first.approve(finished.runId)).status).toBe("completed");
    const paused = await first.run({ message: "write, then wait" });
    expect(paused.status).toBe("waiting_approval");
    // Another agent's finished run in the same store and sandbox folder, and a key that is no run.
    const input = { message: "x", metadata: {} };
    const { run: other } = await state.createRun({ id: "run_of_another_agent", agentId: "another-agent", agentRevision: "r", modelSpec: "m", input, status: "running" });
    await state.appendEvents(other.id, [{ type: "run.completed", data: { output: "done" } }], { run: { status: "completed" } });
    // A finished run whose holder's lease has not expired: its drive may be releasing the sandbox now.
    const { run: held } = await state.createRun({ id: "run_still_held", agentId: bundle.manifest.agent.id, agentRevision: bundle.manifest.agentRevision, modelSpec: "m", input, status: "running" }, { lease: { owner: "another-process", ttlMs: 60_000 } });
    await state.appendEvents(held.id, [{ type: "run.completed", data: { output: "done" } }], { run: { status: "completed" } });
    for (const key of [other.id, held.id, "scratch"]) await local.acquire(key);
    expect(await local.listKeys()).toEqual([finished.runId, paused.runId, other.id, held.id, "scratch"].sort());

    const second = new OpenEveRuntime({ ...bundle, state, sandbox: new LocalSandboxAdapter({ root }), logger: noopLogger() });
    expect(await second.releaseFinishedSandboxes()).toEqual([finished.runId]);
    expect(existsSync(join(root, finished.runId))).toBe(false);
    expect(await local.listKeys()).toEqual([paused.runId, other.id, held.id, "scratch"].sort());
    // Nothing left to release: a second sweep releases nothing.
    expect(await second.releaseFinishedSandboxes()).toEqual([]);
  });

  it("is left alone by an adapter that cannot list its keys", async () => {
    const bundle = await agent([{ text: "nothing to do" }]);
    const sandbox = countingSandbox(join(work, "sandboxes-unlisted"));
    const runtime = new OpenEveRuntime({ ...bundle, state: new InMemoryStateAdapter(), sandbox: sandbox.adapter, logger: noopLogger() });
    expect(await runtime.releaseFinishedSandboxes()).toEqual([]);
  });
});

describe("the local sandbox's keys", () => {
  it("are read back from its folder names, odd characters and all; a shortened name or a stray folder is not a key", async () => {
    const root = join(work, "sandboxes-keys");
    const local = new LocalSandboxAdapter({ root });
    const keys = ["run_1", "agent/sub run", "ключ", "a%b"];
    for (const key of keys) await local.acquire(key);
    await local.acquire("k".repeat(300));
    mkdirSync(join(root, "not%zzencoded"));
    expect(await local.listKeys()).toEqual([...keys].sort());
    expect(await new LocalSandboxAdapter({ root: join(work, "no-such-folder") }).listKeys()).toEqual([]);
  });
});
