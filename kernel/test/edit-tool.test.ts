import { describe, expect, it } from "vitest";
import { CrashOnceBefore } from "./support/crash-once-state.js";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/** One edit of `path` in memory holding `before`, with the process dying right before the first append of an event of `crashBefore`. */
async function editThroughACrash(crashBefore: string, path: string, before: string, oldText: string, newText: string) {
  const state = new CrashOnceBefore(crashBefore);
  await state.writeMemory(path, before);
  const script = [{ toolCalls: [{ name: "edit", input: { path: `/memory/${path}`, oldText, newText } }] }, { text: "done" }];
  const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), script, { state });
  await expect(runtime.run({ message: "go" })).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
  const [run] = (await state.listRuns()).runs;
  expect((await runtime.resume(run!.id)).status).toBe("completed");
  return { content: (await state.readMemory(path))?.content, outcome: log.outcomes.at(-1)!.outcome };
}

describe("edit built-in replayed after a crash", () => {
  it("applies an edit once when the process dies after the file was written and before tool.completed was recorded", async () => {
    const { content, outcome } = await editThroughACrash("tool.completed", "notes.md", "status: open\n", "status: open", "status: open (checked)");
    // The model asked for one edit: the note must hold it once.
    expect(content).toBe("status: open (checked)\n");
    expect(outcome).toMatchObject({ status: "completed", isError: false, output: { replaced: 1 } });
  });

  it("reports an edit that landed before the crash as done, not as 'oldText occurs 0 times'", async () => {
    const { content, outcome } = await editThroughACrash("tool.completed", "todo.md", "- [ ] ship\n", "- [ ] ship", "- [x] ship");
    expect(content).toBe("- [x] ship\n");
    expect(outcome).toMatchObject({ status: "completed", isError: false, output: { replaced: 1 } });
  });

  it("works the edit out again when the process died before it was recorded, as for a call of a journal from before edits were recorded", async () => {
    const { content, outcome } = await editThroughACrash("durable_step.completed", "todo.md", "- [ ] ship\n", "- [ ] ship", "- [x] ship");
    expect(content).toBe("- [x] ship\n");
    expect(outcome).toMatchObject({ status: "completed", isError: false, output: { replaced: 1 } });
  });

  it("gives the refusal it recorded again after a crash, leaving the file as it was", async () => {
    const { content, outcome } = await editThroughACrash("tool.completed", "todo.md", "- [ ] ship\n- [ ] ship\n", "- [ ] ship", "- [x] ship");
    expect(content).toBe("- [ ] ship\n- [ ] ship\n");
    expect(outcome).toMatchObject({ status: "completed", output: { error: "oldText occurs 2 times in /memory/todo.md; it must occur exactly once" } });
  });
});
