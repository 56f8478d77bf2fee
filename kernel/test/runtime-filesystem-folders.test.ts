import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalSandboxAdapter } from "@assemblyline-agents/local";
import type { FileIndexStore, FileRecord, JsonValue, MemoryStateStore } from "@assemblyline-agents/core";
import { createRuntimeFilesystem, InMemoryStateAdapter, type RuntimeFilesystem } from "../src/index.js";
import type { SkillLibrary } from "../src/skills/skill-library.js";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const file = (path: string): FileRecord => ({ path, blobKey: `blob:${path}`, size: 3, contentType: "text/plain", sha256: "0", runId: null, createdAt: "2030-01-01T00:00:00.000Z" });
const paths = (entries: Array<{ path: string }>) => entries.map((entry) => entry.path);

/** A state where notes/ and report/ each have a sibling sharing the start of their name. */
async function seeded(): Promise<InMemoryStateAdapter> {
  const state = new InMemoryStateAdapter();
  await state.writeMemory("notes/a.md", "alpha in notes/");
  await state.writeMemory("notes-archive.md", "a sibling, not in notes/");
  await state.writeMemory("notes2.md", "another sibling");
  for (const path of ["/files/report/q1.txt", "/files/report-draft.txt", "/files/reports.txt"]) await state.putFileRecord(file(path));
  return state;
}

type Stores = { memory: MemoryStateStore; files: FileIndexStore };
/** The stores as they are, and as a store from before the optional listing methods (listMemoryEntries, first*) sees them. */
function variants(state: InMemoryStateAdapter): Array<[string, Stores]> {
  const bare: Stores = {
    memory: {
      readMemory: (path) => state.readMemory(path),
      writeMemory: (path, content) => state.writeMemory(path, content),
      listMemory: (prefix) => state.listMemory(prefix),
      deleteMemory: (path) => state.deleteMemory(path),
    },
    files: {
      putFileRecord: (record) => state.putFileRecord(record),
      getFileRecord: (path) => state.getFileRecord(path),
      deleteFileRecord: (path) => state.deleteFileRecord(path),
      listFileRecords: (options) => state.listFileRecords(options),
    },
  };
  return [
    ["a store with every listing method", { memory: state, files: state }],
    ["a store with only the required ones", bare],
  ];
}

const sandboxRoots: string[] = [];
afterAll(() => {
  for (const root of sandboxRoots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** The filesystem over `state`, with a real local sandbox behind /workspace when `sandbox` is set. */
function filesystem(state: InMemoryStateAdapter, stores: Stores = { memory: state, files: state }, sandbox = false): RuntimeFilesystem {
  const root = sandbox ? mkdtempSync(join(tmpdir(), "al-fs-sandboxes-")) : undefined;
  if (root) sandboxRoots.push(root);
  const adapter = root ? new LocalSandboxAdapter({ root }) : undefined;
  return createRuntimeFilesystem({
    ...stores,
    conversations: state,
    conversationId: null,
    blob: undefined,
    getSandbox: async () => {
      if (!adapter) throw new Error("no sandbox in this test");
      return adapter.acquire("run-1");
    },
    skills: { list: async () => [] } as unknown as SkillLibrary,
  });
}

describe("a folder of the runtime filesystem holds the paths below it, never a sibling sharing the start of its name", () => {
  it("lists and pages /memory/notes without notes-archive.md or notes2.md beside it", async () => {
    const state = await seeded();
    for (const [, stores] of variants(state)) {
      const fs = filesystem(state, stores);
      expect(paths(await fs.list("/memory/notes"))).toEqual(["/memory/notes/a.md"]);
      expect(paths(await fs.list("/memory/notes/"))).toEqual(["/memory/notes/a.md"]);
      expect(await fs.first("/memory/notes", 10)).toEqual({ entries: [{ path: "/memory/notes/a.md", type: "file", size: 15 }], total: 1 });
      expect(paths(await fs.list("/memory"))).toEqual(["/memory/notes-archive.md", "/memory/notes/a.md", "/memory/notes2.md"]);
    }
  });

  it("lists and pages /files/report without report-draft.txt or reports.txt beside it", async () => {
    const state = await seeded();
    for (const [, stores] of variants(state)) {
      const fs = filesystem(state, stores);
      expect(paths(await fs.list("/files/report"))).toEqual(["/files/report/q1.txt"]);
      expect(await fs.first("/files/report", 10)).toEqual({ entries: [{ path: "/files/report/q1.txt", type: "file", size: 3 }], total: 1 });
      expect((await fs.first("/files", 10)).total).toBe(3);
    }
  });

  it("lists a file path as that file, first, before any file under the same name as a folder", async () => {
    const state = await seeded();
    await state.writeMemory("notes", "a file named like the folder");
    await state.putFileRecord(file("/files/report"));
    for (const [, stores] of variants(state)) {
      const fs = filesystem(state, stores);
      expect(paths(await fs.list("/memory/notes"))).toEqual(["/memory/notes", "/memory/notes/a.md"]);
      expect(paths(await fs.list("/memory/notes2.md"))).toEqual(["/memory/notes2.md"]);
      expect(await fs.first("/memory/notes", 1)).toEqual({ entries: [{ path: "/memory/notes", type: "file", size: 28 }], total: 2 });
      expect(paths(await fs.list("/files/report"))).toEqual(["/files/report", "/files/report/q1.txt"]);
      expect(paths(await fs.list("/files/reports.txt"))).toEqual(["/files/reports.txt"]);
      const page = await fs.first("/files/report", 1);
      expect({ paths: paths(page.entries), total: page.total }).toEqual({ paths: ["/files/report"], total: 2 });
      // A file under except stays out, itself too.
      expect(await fs.first("/files/report", 5, { except: "/files/report" })).toEqual({ entries: [], total: 0 });
    }
  });

  it("keeps the siblings out of the list and grep tools' results", async () => {
    const state = await seeded();
    const calls: Array<{ name: string; input: JsonValue }> = [
      { name: "list", input: { path: "/memory/notes" } },
      { name: "grep", input: { pattern: "i", path: "/memory/notes" } },
      { name: "list", input: { path: "/files/report" } },
    ];
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: calls }, { text: "done" }], { state });
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    const outputs = log.outcomes.map((entry) => entry.outcome);
    expect(outputs[0]).toMatchObject({ isError: false, output: { entries: [{ path: "/memory/notes/a.md" }] } });
    const listed = (index: number) => (outputs[index] as unknown as { output: { entries: Array<{ path: string }> } }).output.entries;
    expect(listed(0)).toHaveLength(1);
    expect(outputs[1]).toMatchObject({ isError: false, output: { matches: ["/memory/notes/a.md:1:alpha in notes/"], truncated: false } });
    expect(paths(listed(2))).toEqual(["/files/report/q1.txt"]);
  });
});

describe("a root folder of the runtime filesystem is no file", () => {
  it("refuses to write, edit or delete /memory or /workspace themselves, naming the path, and lists no phantom file", async () => {
    const state = await seeded();
    const fs = filesystem(state);
    for (const path of ["/memory", "/memory/", "/workspace", "/workspace//"]) {
      await expect(fs.write(path, "root")).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE", message: expect.stringContaining("is a root folder, not a file") });
      await expect(fs.delete(path)).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE" });
    }
    expect(await state.readMemory("")).toBeUndefined();
    expect(paths(await fs.list("/memory"))).toEqual(["/memory/notes-archive.md", "/memory/notes/a.md", "/memory/notes2.md"]);
    // A read-only root stays refused as read-only.
    await expect(fs.write("/history", "x")).rejects.toMatchObject({ code: "AL_ERR_PATH_READ_ONLY" });
  });

  it("gives the write tool's model a recoverable error for a root folder, and the run goes on", async () => {
    const calls: Array<{ name: string; input: JsonValue }> = [
      { name: "write", input: { path: "/memory", content: "root" } },
      { name: "list", input: { path: "/memory" } },
    ];
    const { runtime, log, state } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: calls }, { text: "done" }]);
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    const outputs = log.outcomes.map((entry) => entry.outcome);
    expect(outputs[0]).toMatchObject({ isError: true, output: { code: "AL_ERR_PATH_ESCAPE", error: expect.stringMatching(/\/memory is a root folder, not a file[\s\S]*fix: Name a file inside it, e\.g\. \/memory\/notes\.md/) } });
    expect(outputs[1]).toMatchObject({ isError: false, output: { entries: [] } });
    expect(await state.listMemory()).toEqual([]);
  });
});

describe("delete of a path with nothing at it", () => {
  it("is refused under /memory, naming the path, and deletes nothing else", async () => {
    const state = await seeded();
    const fs = filesystem(state);
    await expect(fs.delete("/memory/notes/b.md")).rejects.toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND", message: expect.stringContaining("nothing at /memory/notes/b.md") });
    // A folder is no memory file either.
    await expect(fs.delete("/memory/notes")).rejects.toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND" });
    expect(await state.listMemory()).toEqual(["notes-archive.md", "notes/a.md", "notes2.md"]);
    await fs.delete("/memory/notes/a.md");
    expect(await state.listMemory()).toEqual(["notes-archive.md", "notes2.md"]);
    await expect(fs.delete("/memory/notes/a.md")).rejects.toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND" });
  });

  it("is refused under /workspace, where the sandbox itself takes a missing path as done; a file and an empty folder are deleted", async () => {
    const state = await seeded();
    const fs = filesystem(state, undefined, true);
    await fs.write("/workspace/out/report.txt", "done");
    await expect(fs.delete("/workspace/out/reprot.txt")).rejects.toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND", message: expect.stringContaining("nothing at /workspace/out/reprot.txt") });
    await expect(fs.delete("/workspace/nowhere/report.txt")).rejects.toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND" });
    await fs.delete("/workspace/out/report.txt");
    expect(paths(await fs.list("/workspace"))).toEqual(["/workspace/out"]);
    // The folder is empty now, so it lists nothing of its own, and is still there to delete.
    await fs.delete("/workspace/out");
    expect(await fs.list("/workspace")).toEqual([]);
    await expect(fs.delete("/workspace/out")).rejects.toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND" });
  });

  it("gives the delete tool's model a recoverable error instead of { deleted: true }, and the run goes on", async () => {
    const calls: Array<{ name: string; input: JsonValue }> = [
      { name: "write", input: { path: "/memory/todo.md", content: "x" } },
      { name: "delete", input: { path: "/memory/tdoo.md" } },
      { name: "delete", input: { path: "/memory/todo.md" } },
    ];
    const { runtime, log, state } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: calls }, { text: "done" }]);
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    const outputs = log.outcomes.map((entry) => entry.outcome);
    expect(outputs[1]).toMatchObject({ isError: true, output: { code: "AL_ERR_PATH_NOT_FOUND", error: expect.stringContaining("nothing at /memory/tdoo.md") } });
    expect(outputs[2]).toMatchObject({ isError: false, output: { path: "/memory/todo.md", deleted: true } });
    expect(await state.listMemory()).toEqual([]);
  });
});
