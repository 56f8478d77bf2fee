import type { RunEvent } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const hookFile = (body: string) => `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { ${body} } });
`;

describe("hooks are observe-only", () => {
  it("gives each hooks/ file its own copy of an event: one that changes it changes nothing other hooks, the host or the log see", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/note.ts": toolSource({ upFront: true }),
      // Sorted before b.ts, so it is tapped (and called) first.
      "hooks/a-rewrites.ts": hookFile(`"*"(event) { event.type = "rewritten." + event.type; event.runId = "run_other"; event.data.injected = true; }`),
      "hooks/b-records.ts": hookFile(`"*"(event) { (globalThis.__hookCopies ??= []).push({ type: event.type, runId: event.runId, injected: "injected" in event.data }); }`),
    });
    (globalThis as { __hookCopies?: unknown[] }).__hookCopies = [];
    const { runtime, events, observed } = await startAgent(dir, [{ toolCalls: [{ name: "note", input: { value: "a" } }] }, { text: "ok" }]);
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    const recorded = await events(result.runId);
    expect(recorded.some((event) => event.type.startsWith("rewritten.") || "injected" in event.data)).toBe(false);
    const original = recorded.map((event) => ({ type: event.type, runId: result.runId, injected: false }));
    // Another hooks/ file, and an observer the host taps after the agent's hooks, see the events as recorded.
    expect((globalThis as { __hookCopies?: unknown[] }).__hookCopies).toEqual(original);
    expect(observed.map((event: RunEvent) => ({ type: event.type, runId: event.runId, injected: "injected" in event.data }))).toEqual(original);
    expect(recorded.filter((event) => event.type === "hook.failed")).toEqual([]);
  });
});
