import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalSandboxAdapter } from "@assemblyline-agents/local";
import { builtInToolDefaults, idempotencyKeyFor, InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { CrashOnceBefore } from "./support/crash-once-state.js";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";
import { filesystemOver, toolContextOver } from "./support/tool-filesystem.js";

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

  it("records what it decided as digests, not a copy of the file, in the run's journal", async () => {
    const state = new InMemoryStateAdapter();
    const body = `${"unrelated line of a long note\n".repeat(200)}status: open\n`;
    await state.writeMemory("long.md", body);
    const script = [{ toolCalls: [{ name: "edit", input: { path: "/memory/long.md", oldText: "status: open", newText: "status: done" } }] }, { text: "done" }];
    const { runtime, events } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), script, { state });
    const result = await runtime.run({ message: "go" });
    expect((await state.readMemory("long.md"))?.content).toBe(body.replace("status: open", "status: done"));
    const called = (await events(result.runId)).find((event) => event.type === "tool.called")!;
    const step = await state.getStep(result.runId, `edit:${idempotencyKeyFor(result.runId, String(called.data.callId), "edited")}`);
    expect(step?.result).toMatchObject({ before: expect.any(String), after: expect.any(String) });
    expect(JSON.stringify(step)).not.toContain("unrelated line of a long note");
  });

  it("gives the refusal it recorded again after a crash, leaving the file as it was", async () => {
    const { content, outcome } = await editThroughACrash("tool.completed", "todo.md", "- [ ] ship\n- [ ] ship\n", "- [ ] ship", "- [x] ship");
    expect(content).toBe("- [ ] ship\n- [ ] ship\n");
    expect(outcome).toMatchObject({ status: "completed", output: { error: "oldText occurs 2 times in /memory/todo.md; it must occur exactly once" } });
  });
});

const roots: string[] = [];
afterAll(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A tool context whose runtime filesystem has a real local sandbox behind /workspace (steps run their body: no journal here). */
async function sandboxed() {
  const root = mkdtempSync(join(tmpdir(), "al-edit-tool-"));
  roots.push(root);
  const sandbox = await new LocalSandboxAdapter({ root }).acquire("run-1");
  const state = new InMemoryStateAdapter();
  const ctx = toolContextOver(filesystemOver(state, { sandbox }), { idempotencyKey: (scope: string) => `key-${scope}`, step: async (_key: string, fn: () => unknown) => fn() });
  return { sandbox, state, ctx };
}

describe("edit built-in keeps the bytes it was not asked to change", () => {
  it("refuses a /workspace file that is not UTF-8, leaving it byte for byte, instead of writing U+FFFD for each accented character", async () => {
    const { sandbox, ctx } = await sandboxed();
    const original = Buffer.from("nom;ville\nRené;Besançon\nstatus;old\n", "latin1");
    await sandbox.writeFile("/workspace/clients.csv", original);
    const result = await builtInToolDefaults.edit.execute({ path: "/workspace/clients.csv", oldText: "status;old", newText: "status;new" }, ctx);
    expect(result).toEqual({
      path: "/workspace/clients.csv",
      error: expect.stringMatching(/^\/workspace\/clients\.csv is not UTF-8 text, .* it was left as it was\. Convert it to UTF-8 first/),
    });
    expect(Buffer.from(await sandbox.readFile("/workspace/clients.csv")).equals(original)).toBe(true);
  });

  it("keeps a UTF-8 byte order mark at the start of a /workspace file it edits", async () => {
    const { sandbox, ctx } = await sandboxed();
    await sandbox.writeFile("/workspace/export.csv", Buffer.from("\uFEFFname,city\nold,Zürich\n", "utf8"));
    const result = await builtInToolDefaults.edit.execute({ path: "/workspace/export.csv", oldText: "old", newText: "new" }, ctx);
    expect(result).toEqual({ path: "/workspace/export.csv", replaced: 1 });
    expect(Buffer.from(await sandbox.readFile("/workspace/export.csv")).toString("utf8")).toBe("\uFEFFname,city\nnew,Zürich\n");
  });

  it("refuses an oldText that occurs twice, overlapping, instead of picking the first", async () => {
    const { state, ctx } = await sandboxed();
    await state.writeMemory("code.md", "  }\n}\n}\n");
    // "}\n}" is at offsets 2 and 4: two occurrences, so which one to replace is ambiguous.
    const result = await builtInToolDefaults.edit.execute({ path: "/memory/code.md", oldText: "}\n}", newText: "}" }, ctx);
    expect(result).toEqual({ path: "/memory/code.md", error: "oldText occurs 2 times in /memory/code.md; it must occur exactly once" });
    expect((await state.readMemory("code.md"))?.content).toBe("  }\n}\n}\n");
  });

  it("still edits an oldText that occurs once beside a near miss", async () => {
    const { state, ctx } = await sandboxed();
    await state.writeMemory("code.md", "  }\n}\n");
    const result = await builtInToolDefaults.edit.execute({ path: "/memory/code.md", oldText: "}\n}", newText: "}" }, ctx);
    expect(result).toEqual({ path: "/memory/code.md", replaced: 1 });
    expect((await state.readMemory("code.md"))?.content).toBe("  }\n");
  });
});
