import { describe, expect, it } from "vitest";
import type { FileIndexStore, FileRecord } from "@assemblyline-agents/core";
import { createRuntimeFilesystem, InMemoryStateAdapter, type RuntimeFilesystem } from "../src/index.js";
import type { SkillLibrary } from "../src/skills/skill-library.js";

const file = (path: string): FileRecord => ({ path, blobKey: `blob:${path}`, size: 3, contentType: "text/plain", sha256: "0", runId: null, createdAt: "2030-01-01T00:00:00.000Z" });

async function filesystem(files?: (state: InMemoryStateAdapter) => FileIndexStore): Promise<RuntimeFilesystem> {
  const state = new InMemoryStateAdapter();
  for (const path of ["/files/attachments/run_1/a.png", "/files/guide.md", "/files/attachments/run_2/b.png", "/files/zz.md"]) await state.putFileRecord(file(path));
  for (const path of ["notes.md", "private/key.md", "todo.md"]) await state.writeMemory(path, "abc");
  return createRuntimeFilesystem({
    memory: state,
    conversations: state,
    conversationId: null,
    files: files ? files(state) : state,
    blob: undefined,
    getSandbox: async () => {
      throw new Error("no sandbox in this test");
    },
    // Listing /files and /memory never asks the skills or the sandbox.
    skills: { list: async () => [] } as unknown as SkillLibrary,
  });
}
const paths = (entries: Array<{ path: string }>) => entries.map((entry) => entry.path);

describe("RuntimeFilesystem.list with except", () => {
  it("leaves out the paths under except, under /files and under every other root", async () => {
    const fs = await filesystem();
    expect(paths(await fs.list("/files", { except: "/files/attachments/" }))).toEqual(["/files/guide.md", "/files/zz.md"]);
    expect(paths(await fs.list("/memory", { except: "/memory/private/" }))).toEqual(["/memory/notes.md", "/memory/todo.md"]);
    expect(paths(await fs.list("/files"))).toHaveLength(4);
  });

  it("leaves them out also where the file index does not know excludePrefix", async () => {
    // A store written before excludePrefix existed lists everything under the prefix.
    const fs = await filesystem((state) => ({
      putFileRecord: (record) => state.putFileRecord(record),
      getFileRecord: (path) => state.getFileRecord(path),
      deleteFileRecord: (path) => state.deleteFileRecord(path),
      listFileRecords: (options) => state.listFileRecords(options?.prefix === undefined ? {} : { prefix: options.prefix }),
    }));
    expect(paths(await fs.list("/files", { except: "/files/attachments/" }))).toEqual(["/files/guide.md", "/files/zz.md"]);
  });
});

describe("RuntimeFilesystem.first", () => {
  it("gives the first files of a listing and how many it has, under /memory and every other root", async () => {
    const fs = await filesystem();
    const memory = await fs.first("/memory", 2);
    expect({ paths: paths(memory.entries), total: memory.total }).toEqual({ paths: ["/memory/notes.md", "/memory/private/key.md"], total: 3 });
    expect(memory.entries[0]).toEqual({ path: "/memory/notes.md", type: "file", size: 3 });
    expect(await fs.first("/memory/private", 5)).toEqual({ entries: [{ path: "/memory/private/key.md", type: "file", size: 3 }], total: 1 });
    expect(await fs.first("/memory", 0)).toEqual({ entries: [], total: 3 });
    const files = await fs.first("/files", 1);
    expect({ paths: paths(files.entries), total: files.total }).toEqual({ paths: [(await fs.list("/files"))[0]!.path], total: 4 });
  });

  it("leaves out the files under except, with the store's firstFileRecords and without it", async () => {
    const withPages = await filesystem();
    // A store from before firstFileRecords: the filesystem lists and cuts.
    const without = await filesystem((state) => ({
      putFileRecord: (record) => state.putFileRecord(record),
      getFileRecord: (path) => state.getFileRecord(path),
      deleteFileRecord: (path) => state.deleteFileRecord(path),
      listFileRecords: (options) => state.listFileRecords(options),
    }));
    for (const fs of [withPages, without]) {
      const page = await fs.first("/files", 1, { except: "/files/attachments/" });
      expect({ paths: paths(page.entries), total: page.total }).toEqual({ paths: ["/files/guide.md"], total: 2 });
      expect(await fs.first("/files/attachments/", 5, { except: "/files/attachments/run_1/" })).toEqual({
        entries: [{ path: "/files/attachments/run_2/b.png", type: "file", size: 3 }],
        total: 1,
      });
    }
  });

  it("refuses a limit that is not a whole number of entries, naming it", async () => {
    const fs = await filesystem();
    for (const limit of [-1, 2.5, Number.NaN]) {
      await expect(fs.first("/memory", limit)).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining(`limit ${limit}`) });
    }
  });
});
