import { describe, expect, it } from "vitest";
import { defineTool, type ConnectionProvider } from "@assemblyline-agents/core";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/**
 * A tool that does not watch ctx.signal goes on after the caller cancels the run. Its ctx refuses
 * ctx.step and ctx.emit then; the automations, connections and skills it would write are refused too.
 */
type Outcomes = { __stoppedCallOutcome?: string };
const outcome = () => (globalThis as Outcomes).__stoppedCallOutcome;

/** A tool that waits `waitMs`, then tries `write`, noting whether it was refused. */
function lateWriter(write: string, waitMs = 300): string {
  return toolSource({
    upFront: true,
    execute: `await new Promise((resolve) => setTimeout(resolve, ${waitMs}));
    try { await ${write}; globalThis.__stoppedCallOutcome = "written"; }
    catch (error) { globalThis.__stoppedCallOutcome = "refused: " + (error && error.message); }
    return { ok: true };`,
  });
}

async function cancelWhileTheToolRuns(runtime: Awaited<ReturnType<typeof startAgent>>["runtime"]) {
  (globalThis as Outcomes).__stoppedCallOutcome = undefined;
  const cancel = new AbortController();
  setTimeout(() => cancel.abort(new Error("cancelled by the caller")), 100);
  const result = await runtime.run({ message: "go", signal: cancel.signal });
  expect(result).toMatchObject({ status: "failed", error: { message: "cancelled by the caller" } });
  // The tool finishes in the background.
  await new Promise((resolve) => setTimeout(resolve, 600));
  return result;
}

describe("a tool call the run stopped waiting for writes no automation, connection or skill", () => {
  it("refuses ctx.automationManager.create with the cancel's reason", async () => {
    const { runtime, state } = await startAgent(
      agentFolder({
        "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", dynamicAutomations: { dynamic: true, approval: false } });
`,
        "tools/slow.ts": lateWriter(`ctx.automationManager.create({ name: "late", schedule: { every: 60000 }, message: "poll" })`),
      }),
      [{ toolCalls: [{ name: "slow", input: { value: "x" } }] }, { text: "done" }],
    );
    await cancelWhileTheToolRuns(runtime);
    expect(outcome()).toBe("refused: cancelled by the caller");
    expect(await state.listSchedules()).toEqual([]);
  });

  it("refuses ctx.selfImprovement.create with the cancel's reason", async () => {
    const { runtime, state } = await startAgent(
      agentFolder({
        "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "learner", model: "test/model", selfImprovement: { writable: true } });
`,
        "tools/slow.ts": lateWriter(`ctx.selfImprovement.create({ name: "late-skill", description: "Made late.", body: "1. Do it." })`),
      }),
      [{ toolCalls: [{ name: "slow", input: { value: "x" } }] }, { text: "done" }],
    );
    await cancelWhileTheToolRuns(runtime);
    expect(outcome()).toBe("refused: cancelled by the caller");
    expect(await state.listSkills("learner")).toEqual([]);
  });

  it("does not store a connection whose describe was still under way when the run was cancelled", async () => {
    // The add starts before the cancel; the provider's describe answers after it.
    const slowDescribe: ConnectionProvider = {
      describe: async () => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return {};
      },
      tools: (name) => ({ [`${name}__ping`]: defineTool({ description: "Ping.", inputSchema: { type: "object" }, execute: async () => ({ pong: true }) }) }),
    };
    const { runtime, state } = await startAgent(
      agentFolder({
        "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "crm-agent", model: "test/model", dynamicConnections: { dynamic: true, approval: false, allowedHosts: ["crm.example.com"] } });
`,
        "tools/slow.ts": lateWriter(`ctx.connectionManager.add({ name: "crm", kind: "http", baseUrl: "https://crm.example.com", endpoints: { get_item: { method: "GET", path: "/items/{id}", description: "Get." } } })`, 0),
      }),
      [{ toolCalls: [{ name: "slow", input: { value: "x" } }] }, { text: "done" }],
      { connections: slowDescribe },
    );
    await cancelWhileTheToolRuns(runtime);
    expect(outcome()).toBe("refused: cancelled by the caller");
    expect(await state.getSetting("connections:crm-agent")).toBeUndefined();
  });
});
