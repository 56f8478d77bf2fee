import { cpSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { noopLogger, type RunStatus } from "@assemblyline-agents/core";
import { LocalSandboxAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { FIXTURE_AGENT, SCRIPTS, routedHarness, startHost, tempDir, waitFor } from "./support/host.js";

/**
 * What a crash leaves of subagent runs, which the host never resumes itself (their parents' drives do):
 * a parent not woken after its child ended, and a child left under a parent that has ended.
 */
let bundle: RuntimeBundle;
beforeAll(async () => {
  const agentDir = join(tempDir("al-host-agent-"), "agent");
  cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
  const files: Record<string, string> = {
    "subagents/asker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Asks." });\n`,
    "tools/ask_one.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "One asker.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  defaultEnabled: true,
  async execute(_input: {}, ctx: any) {
    return ctx.spawnSubagent({ name: "asker", task: "ask: one" });
  },
});
`,
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(agentDir, file)), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  bundle = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
});

const harness = routedHarness({ ...SCRIPTS, "ask-one": { turns: [{ toolCalls: [{ name: "ask_one", input: {} }] }, { text: "one answered" }] } });
/** Short leases, frequent sweeps: a run left without a lease is settled (2 leases) within a second. */
const QUICK = { leaseTtlMs: 200, recoveryIntervalMs: 50, agentHarness: harness } as const;

/**
 * A parent in `status` and its asker subagent's run left `running` without a lease, as a crash leaves them;
 * `name` tells several apart, `agentRevision` puts both under another build.
 */
async function leftChild(state: InMemoryStateAdapter, status: RunStatus, options: { name?: string; agentRevision?: string } = {}) {
  const rootId = bundle.manifest.agent.id;
  const name = options.name ?? "left";
  const base = { agentRevision: options.agentRevision ?? bundle.manifest.agentRevision, modelSpec: bundle.manifest.agent.model };
  const { run: parent } = await state.createRun({ ...base, id: name === "left" ? "run_parent" : `run_parent_${name}`, agentId: rootId, input: { message: "ask-one: go", metadata: {} }, status: "running" });
  await state.appendEvents(parent.id, [{ type: "run.started", data: { modelSpec: base.modelSpec, instructions: "", defaultTools: null } }]);
  if (status === "failed") await state.appendEvents(parent.id, [{ type: "run.failed", data: { code: "AL_ERR_RUN_CANCELLED", message: "cancelled" } }], { run: { status: "failed" } });
  if (status === "waiting_input") await state.appendEvents(parent.id, [], { run: { status: "waiting_input" } });
  const parentLink = { runId: parent.id, callId: "call_0_0", subagent: "asker", depth: 1, sandboxRunId: `run_sub_${name}` };
  const { run: child } = await state.createRun({ ...base, id: `run_sub_${name}`, agentId: `${rootId}/asker`, input: { message: "ask: one", metadata: {}, parent: parentLink }, status: "running" });
  await state.appendEvents(child.id, [{ type: "run.started", data: { modelSpec: base.modelSpec, instructions: "", defaultTools: null } }]);
  return { parent, child };
}

describe("the host's recovery of subagent runs", () => {
  it("fails a subagent run a crash left under a parent that has failed since, without driving it, and releases its sandbox", async () => {
    const state = new InMemoryStateAdapter();
    const { child } = await leftChild(state, "failed");
    const root = tempDir("al-host-sandboxes-");
    const sandbox = new LocalSandboxAdapter({ root });
    await (await sandbox.acquire(child.id)).writeFile("/workspace/left.txt", "left behind");

    const host = await startHost(bundle, { ...QUICK, state, sandbox });
    const failed = await waitFor(async () => {
      const run = await state.getRun(child.id);
      return run?.status === "failed" ? run : undefined;
    }, 20_000, "the left subagent run to fail");
    expect({ code: failed.error?.code, message: failed.error?.message }).toMatchObject({ code: "AL_ERR_SUBAGENT_PARENT_ENDED", message: expect.stringContaining("its parent run run_parent") });
    const types = (await state.listEvents(child.id)).map((event) => event.type);
    expect(types.filter((type) => type === "run.resumed" || type === "model.request")).toEqual([]);
    await waitFor(() => (existsSync(join(root, child.id)) ? undefined : true), 20_000, "the failed run's sandbox to be released");
    expect(host.logger.events("recovery.subagent_runs_failed").map((entry) => entry.fields.runIds)).toEqual([[child.id]]);
  });

  it("goes on to the other left runs when one cannot be failed here (its build is not kept by this host)", async () => {
    const state = new InMemoryStateAdapter();
    const { child } = await leftChild(state, "failed");
    // Listed first (newest): a run of a build this host does not have.
    const { child: foreign } = await leftChild(state, "failed", { name: "foreign", agentRevision: "rev_not_kept" });
    const host = await startHost(bundle, { ...QUICK, state });
    await waitFor(async () => ((await state.getRun(child.id))?.status === "failed" ? true : undefined), 20_000, "the left subagent run to fail");
    expect((await state.getRun(foreign.id))?.status).toBe("running");
    expect(host.logger.events("subagent.left_fail_failed").map((entry) => entry.fields.runId)).toContain(foreign.id);
  });

  it("leaves a subagent run whose parent still waits to that parent", async () => {
    const state = new InMemoryStateAdapter();
    const { child } = await leftChild(state, "waiting_input");
    const host = await startHost(bundle, { ...QUICK, state });
    // Well past the 400 ms a run without a lease is given, over many sweeps.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await state.getRun(child.id))?.status).toBe("running");
    expect(host.logger.events("recovery.subagent_runs_failed")).toEqual([]);
  });

  it("wakes a parent left paused on its subagent's question after a crash between the child's end and the parent's wake", async () => {
    const state = new InMemoryStateAdapter();
    // The store as the dying process sees it: nothing reaches it after a subagent run's end is written.
    let dead = false;
    const dying = new Proxy(state, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          if (dead) throw new Error("process died");
          const result: unknown = await (value as (...all: unknown[]) => Promise<unknown>).apply(target, args);
          const childEnd = property === "appendEvents" && String(args[0]).startsWith("run_sub_") && (args[1] as Array<{ type: string }>).some((event) => event.type === "run.completed");
          if (childEnd) dead = true;
          return result;
        };
      },
    });
    const first = new OpenEveRuntime({ ...bundle, state: dying, agentHarness: harness, logger: noopLogger(), leaseTtlMs: 50 });
    // The dying process's store refuses everything by then: closing it only stops its timers.
    onTestFinished(() => first.close().catch(() => undefined));
    const paused = await first.run({ message: "ask-one: go" });
    expect(paused.status).toBe("waiting_input");
    await first.answer(paused.runId, "blue").catch(() => undefined);
    expect({ child: (await state.getRun(paused.waitingOn!.runId))?.status, parent: (await state.getRun(paused.runId))?.status }).toEqual({ child: "completed", parent: "waiting_input" });

    await startHost(bundle, { ...QUICK, state });
    const woken = await waitFor(async () => {
      const run = await state.getRun(paused.runId);
      return run?.status === "completed" ? run : undefined;
    }, 20_000, "the parent to be woken and complete");
    expect(woken.status).toBe("completed");
    expect((await state.listEvents(paused.runId)).filter((event) => event.type === "subagent.completed")).toHaveLength(1);
  });
});
