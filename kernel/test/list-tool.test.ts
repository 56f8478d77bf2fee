import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { MAX_LIST_ENTRIES } from "../src/builtins/filesystem-tools.js";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { outputOf } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";
import { filesystemOver } from "./support/tool-filesystem.js";

/** One list call by the model on `state`; its result. */
async function listed(state: InMemoryStateAdapter, path: string) {
  const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: [{ name: "list", input: { path } }] }, { text: "done" }], { state });
  expect((await runtime.run({ message: "go" })).status).toBe("completed");
  return outputOf(log.outcomes[0]!.outcome) as { entries: Array<{ path: string }>; truncated: boolean; total?: number; note?: string };
}

describe("the list tool's result is bounded, as read's and grep's are", () => {
  it(`hands the model the first ${MAX_LIST_ENTRIES} of 5,000 memory files, how many there are, and how to see the rest`, async () => {
    const state = new InMemoryStateAdapter();
    for (let index = 0; index < 5000; index += 1) await state.writeMemory(`notes/${String(index).padStart(5, "0")}-some-long-descriptive-note-name.md`, "x");
    const output = await listed(state, "/memory");
    expect(output.entries).toHaveLength(MAX_LIST_ENTRIES);
    expect(output.entries[0]!.path).toBe("/memory/notes/00000-some-long-descriptive-note-name.md");
    expect(output).toMatchObject({ truncated: true, total: 5000, note: expect.stringContaining(`The first ${MAX_LIST_ENTRIES} of 5000 entries under /memory: list a folder inside it`) });
    expect(Buffer.byteLength(JSON.stringify(output))).toBeLessThanOrEqual(64 * 1024);
  });

  it("says a listing is whole when it is", async () => {
    const state = new InMemoryStateAdapter();
    await state.writeMemory("a.md", "x");
    expect(await listed(state, "/memory")).toEqual({ entries: [{ path: "/memory/a.md", type: "file", size: 1 }], truncated: false });
  });
});

describe("list of a /history path holds only what is at that path", () => {
  it("lists conversation.md at the root and at its own path, and nothing at any other path, where read finds nothing", async () => {
    const state = new InMemoryStateAdapter();
    await state.appendConversationMessages("c1", [{ role: "user", content: "secret plan", runId: null, createdAt: "2026-01-01T00:00:00.000Z" }], {} as never);
    const fs = filesystemOver(state, { conversationId: "c1" });
    for (const path of ["/history", "/history/conversation.md"]) expect((await fs.list(path)).map((entry) => entry.path), path).toEqual(["/history/conversation.md"]);
    for (const path of ["/history/nope.md", "/history/conversation.md/more", "/history/archive"]) {
      await expect(fs.read(path), path).rejects.toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND" });
      expect(await fs.list(path), path).toEqual([]);
    }
    expect(await filesystemOver(state).list("/history")).toEqual([]);
  });
});
