import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import type { CaptureContent } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { runView } from "../src/host/inspector/run-view.js";

/** A runtime on a built temp agent whose engine calls `tool` once; both removed when the test ends. */
async function pausedOn(agentTs: string, tool: string): Promise<{ runtime: OpenEveRuntime; runId: string }> {
  const dir = mkdtempSync(join(tmpdir(), "al-inspector-change-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const files = {
    "agent.ts": agentTs,
    "tools/act.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({ description: "Acts.", inputSchema: { type: "object" }, defaultEnabled: true, async execute(input, ctx) { ${tool} } });
`,
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const runtime = new OpenEveRuntime({ ...bundle, state: new InMemoryStateAdapter(), logger: noopLogger(), agentHarness: scriptedHarness({ turns: [{ toolCalls: [{ name: "act", input: {} }] }, { text: "done" }] }) });
  onTestFinished(() => runtime.close());
  const { runId, status } = await runtime.run({ message: "act" });
  expect(status).toBe("waiting_approval");
  return { runtime, runId };
}

const pendingOf = async (runtime: OpenEveRuntime, runId: string, mode: CaptureContent) => (await runView(runtime, runId, mode)).pendingApprovals;

describe("the inspector's view of a pending approval of a change", () => {
  it("carries the automation change as a body: shown where bodies are, null where they are left out", async () => {
    const { runtime, runId } = await pausedOn(
      `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", dynamicAutomations: { dynamic: true, approval: true } });\n`,
      `return await ctx.automationManager.create({ name: "digest", schedule: { cron: "0 8 * * *" }, message: "morning digest" });`,
    );
    const [shown] = await pendingOf(runtime, runId, "content");
    expect(shown).toMatchObject({ toolName: "act", skillWrite: null });
    expect(JSON.parse(shown!.change!)).toEqual({ action: "create", name: "digest", automation: { name: "digest", schedule: { cron: "0 8 * * *" }, message: "morning digest" } });
    const [hidden] = await pendingOf(runtime, runId, "usage");
    expect(hidden).toMatchObject({ change: null, skillWrite: null });
  });

  it("carries a skill write's skill, file and action in every mode, and the text it would write as a body", async () => {
    const { runtime, runId } = await pausedOn(
      `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "learner", model: "test/model", selfImprovement: { writable: true, writeApproval: true } });\n`,
      `return await ctx.selfImprovement.create({ name: "release", description: "Release.", body: "1. Tag the release." });`,
    );
    const [shown] = await pendingOf(runtime, runId, "content");
    expect(shown).toMatchObject({ change: null, skillWrite: { name: "release", path: "SKILL.md", action: "create", proposed: expect.stringContaining("1. Tag the release.") } });
    const [hidden] = await pendingOf(runtime, runId, "off");
    expect(hidden!.skillWrite).toEqual({ name: "release", path: "SKILL.md", action: "create", proposed: null });
  });
});
