import { describe, expect, it } from "vitest";
import type { MemoryApi } from "@assemblyline-agents/core";
import { createRuntimeFilesystem, InMemoryStateAdapter, type RuntimeFilesystem } from "../src/index.js";
import { createMemoryApi } from "../src/state/memory-api.js";
import type { SkillLibrary } from "../src/skills/skill-library.js";

/** ctx.memory and the /memory file tools' filesystem, over one store. */
function memoryViews(): { memory: MemoryApi; fs: RuntimeFilesystem; state: InMemoryStateAdapter } {
  const state = new InMemoryStateAdapter();
  const fs = createRuntimeFilesystem({
    memory: state,
    conversations: state,
    conversationId: null,
    files: state,
    blob: undefined,
    getSandbox: async () => {
      throw new Error("no sandbox in this test");
    },
    skills: { list: async () => [] } as unknown as SkillLibrary,
  });
  return { memory: createMemoryApi(state), fs, state };
}

describe("ctx.memory paths", () => {
  it("keys a file as the /memory file tools do, so each side reads and deletes what the other wrote", async () => {
    const { memory, fs, state } = memoryViews();
    const spellings = { "a//b.md": "a/b.md", "./c.md": "c.md", "notes/": "notes", "/memory/d/./e.md": "d/e.md", "memory/f.md": "f.md", "/g.md": "g.md" };
    for (const [written, stored] of Object.entries(spellings)) {
      await memory.write({ path: written, content: `v:${written}` });
      expect(await fs.read(`/memory/${stored}`), written).toBe(`v:${written}`);
      expect(await memory.read({ path: written }), written).toBe(`v:${written}`);
    }
    expect(await state.listMemory()).toEqual(["a/b.md", "c.md", "d/e.md", "f.md", "g.md", "notes"]);
    expect((await fs.list("/memory")).map((entry) => entry.path)).toEqual((await memory.list()).map((path) => `/memory/${path}`));

    await fs.write("/memory/from-tool.md", "tool");
    expect(await memory.read({ path: "./from-tool.md" })).toBe("tool");
    await memory.delete({ path: "a//b.md" });
    await expect(fs.read("/memory/a/b.md")).rejects.toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND" });
  });

  it("refuses the /memory folder itself and an empty path, in every method", async () => {
    const { memory, state } = memoryViews();
    for (const path of ["", "/memory", "/memory/", "memory/", ".", "./", "/"]) {
      await expect(memory.write({ path, content: "root" }), JSON.stringify(path)).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE", message: expect.stringContaining("the /memory folder itself") });
      await expect(memory.read({ path }), JSON.stringify(path)).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE" });
      await expect(memory.delete({ path }), JSON.stringify(path)).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE" });
    }
    expect(await state.listMemory()).toEqual([]);
  });

  it("refuses a path that climbs out, or that is not a string, before the store sees it", async () => {
    const { memory, state } = memoryViews();
    for (const path of ["../x.md", "notes/../../x.md", "/memory/../workspace/x.md"]) {
      await expect(memory.write({ path, content: "x" }), path).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE" });
    }
    await expect(memory.write({ path: 42 as unknown as string, content: "x" })).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE", message: expect.stringContaining("path must be a string") });
    expect(await state.listMemory()).toEqual([]);
  });

  it("refuses a path under another runtime root instead of storing it as a memory file of that name", async () => {
    const { memory, state } = memoryViews();
    for (const path of ["/workspace/report.txt", "/files/a.pdf", "/history/turns.md", "/skills/x/SKILL.md", "/workspace", "//workspace/report.txt", "/./files/"]) {
      await expect(memory.write({ path, content: "x" }), path).rejects.toMatchObject({
        code: "AL_ERR_PATH_ESCAPE",
        message: expect.stringMatching(/is under \/(workspace|files|history|skills), not \/memory/),
        fix: expect.stringContaining("/memory"),
      });
      await expect(memory.read({ path }), path).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE" });
      await expect(memory.delete({ path }), path).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE" });
      await expect(memory.list({ prefix: path }), path).rejects.toMatchObject({ code: "AL_ERR_PATH_ESCAPE" });
    }
    await expect(memory.write({ path: "/workspace/report.txt", content: "x" })).rejects.toMatchObject({ fix: expect.stringContaining('"/memory/report.txt"') });
    expect(await state.listMemory()).toEqual([]);
    // Named without the leading slash, or below /memory, such a folder is one of memory's own.
    await memory.write({ path: "workspace/report.txt", content: "relative" });
    await memory.write({ path: "/memory/files/a.md", content: "below memory" });
    await memory.write({ path: "/workspaces.md", content: "a root's name as a prefix" });
    expect(await state.listMemory()).toEqual(["files/a.md", "workspace/report.txt", "workspaces.md"]);
  });

  it("refuses content that is not a string with a fix, storing nothing", async () => {
    const { memory, state } = memoryViews();
    for (const content of [{ a: 1 }, 7, null, undefined]) {
      await expect(memory.write({ path: "notes/obj.md", content: content as unknown as string })).rejects.toMatchObject({
        code: "AL_ERR_STATE_INPUT_INVALID",
        message: expect.stringContaining("ctx.memory.write(/memory/notes/obj.md): content must be a string"),
        fix: expect.stringContaining("JSON.stringify"),
      });
    }
    expect(await state.listMemory()).toEqual([]);
  });

  it("lists under a prefix spelled as a path is, keeping a trailing slash to mean inside the folder", async () => {
    const { memory } = memoryViews();
    for (const path of ["notes/a.md", "notes-old/b.md", "todo.md"]) await memory.write({ path, content: path });
    expect(await memory.list({ prefix: "notes/" })).toEqual(["notes/a.md"]);
    expect(await memory.list({ prefix: "/memory/./notes//" })).toEqual(["notes/a.md"]);
    expect(await memory.list({ prefix: "notes" })).toEqual(["notes-old/b.md", "notes/a.md"]);
    expect(await memory.list({ prefix: "/memory/" })).toEqual(["notes-old/b.md", "notes/a.md", "todo.md"]);
    expect(await memory.list()).toEqual(["notes-old/b.md", "notes/a.md", "todo.md"]);
  });
});
