import { join, resolve } from "node:path";
import { buildAgent, loadModelScript, loadRuntimeBundle, replayStress } from "@assemblyline-agents/runtime";
import { itIsReplaySafe } from "@assemblyline-agents/core/testkit";
import { describe, expect, it } from "vitest";
import { agentFolder } from "./support/agent-folder.js";

const examples = resolve(import.meta.dirname, "../../examples");

/** A note tool: `keyed` writes under the call's idempotency key, otherwise under a fresh name each time. */
const noteAgent = (keyed: boolean) =>
  agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "Take notes.", defaultTools: ["save_note"] });
`,
    "tools/save_note.ts": `import { randomUUID } from "node:crypto";
import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Save a note.",
  inputSchema: { type: "object", properties: { note: { type: "string" } }, required: ["note"], additionalProperties: false },
  async execute(input, ctx) {
    const name = ${keyed ? `ctx.idempotencyKey("save-note")` : "randomUUID()"};
    await ctx.memory.write({ path: "notes/" + name + ".txt", content: input.note });
    return { saved: true };
  },
});
`,
  });

const saveScript = { turns: [{ toolCalls: [{ name: "save_note", input: { note: "milk" } }] }, { text: "Saved." }] };

async function stressFolder(dir: string, script = saveScript) {
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  return replayStress({ bundle, script, message: "remember milk", conversationId: "c1" });
}

describe("replay stress", () => {
  itIsReplaySafe("finds nothing wrong with the notes example", async () => {
    const dir = join(examples, "notes-agent");
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    return replayStress({ bundle, script: loadModelScript(join(dir, "conversations/remember-milk.json")), message: "Remember to buy milk", conversationId: "c1" });
  });

  itIsReplaySafe("finds nothing wrong with a tool that writes under its idempotency key", () => stressFolder(noteAgent(true)));

  itIsReplaySafe("finds nothing wrong with an agent whose subagent asks a question before it answers", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "Delegate." });
`,
      "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks things up." });
`,
    });
    const script = {
      turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "look it up" } }] }, { text: "parent done" }],
      subagents: { researcher: { turns: [{ toolCalls: [{ name: "ask_question", input: { question: "ok?" } }] }, { text: "found it" }] } },
    };
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    const report = await replayStress({ bundle, script, message: "go", conversationId: "c1", answers: ["yes"] });
    expect(report.recorded).toMatchObject({ status: "completed", text: "parent done" });
    return report;
  });

  itIsReplaySafe("finds nothing wrong with the built-in delete stopped after the file went, before its result", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "Tidy up.", defaultTools: ["write", "delete"] });
`,
    });
    const script = {
      turns: [
        { toolCalls: [{ name: "write", input: { path: "/memory/todo.md", content: "milk" } }] },
        { toolCalls: [{ name: "delete", input: { path: "/memory/todo.md" } }] },
        { toolCalls: [{ name: "delete", input: { path: "/memory/never.md" } }] },
        { text: "Tidied." },
      ],
    };
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    const report = await replayStress({ bundle, script, message: "tidy", conversationId: "c1" });
    expect(report.recorded).toMatchObject({ status: "completed", text: "Tidied." });
    return report;
  });

  itIsReplaySafe("finds nothing wrong with the built-in edit stopped after the file was written, before its result", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "Keep the list.", defaultTools: ["write", "edit"] });
`,
    });
    const script = {
      turns: [
        { toolCalls: [{ name: "write", input: { path: "/memory/todo.md", content: "- [ ] milk\n" } }] },
        { toolCalls: [{ name: "edit", input: { path: "/memory/todo.md", oldText: "- [ ] milk", newText: "- [x] milk" } }] },
        { toolCalls: [{ name: "edit", input: { path: "/memory/todo.md", oldText: "- [ ] eggs", newText: "- [x] eggs" } }] },
        { text: "Kept." },
      ],
    };
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    const report = await replayStress({ bundle, script, message: "tick milk", conversationId: "c1" });
    expect(report.recorded).toMatchObject({ status: "completed", text: "Kept." });
    return report;
  });

  it("catches a tool that writes without an idempotency key, naming the boundary and the repeated write", async () => {
    const report = await stressFolder(noteAgent(false));
    const repeated = report.problems.filter((problem) => problem.kind === "side_effect_repeated");
    expect(repeated.length).toBeGreaterThan(0);
    // Stopped right after the note was written, before the call was recorded completed: the retry writes a second note.
    expect(repeated[0]).toMatchObject({ after: expect.stringMatching(/^writeMemory notes\/[0-9a-f-]{36}\.txt$/) });
    expect(repeated[0]!.detail).toMatch(/^memory "milk" was written 2 times \(notes\/[0-9a-f-]{36}\.txt, notes\/[0-9a-f-]{36}\.txt\), 1 in the recording/);
    expect(report.problems.every((problem) => problem.kind === "side_effect_repeated")).toBe(true);
  });
});
