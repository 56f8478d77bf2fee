import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

describe("a hooks/ file's handlers", () => {
  it.each(["hasOwnProperty", "valueOf", "constructor", "__proto__"])(
    "are not called for a tool's event named %s, which the file does not handle, and no hook.failed blames it",
    async (type) => {
      const dir = agentFolder({
        "agent.ts": MINIMAL_AGENT,
        "tools/note.ts": toolSource({ upFront: true, execute: `await ctx.emit(${JSON.stringify(type)}, {}); return { ok: true };` }),
        "hooks/notes.ts": `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { "note.recorded"() {} } });
`,
      });
      const { runtime, events } = await startAgent(dir, [{ toolCalls: [{ name: "note", input: { value: "a" } }] }, { text: "ok" }]);
      const result = await runtime.run({ message: "go" });
      expect(result.status).toBe("completed");
      const recorded = await events(result.runId);
      expect(recorded.map((event) => event.type)).toContain(type);
      expect(recorded.filter((event) => event.type === "hook.failed")).toEqual([]);
    },
  );
});
