import { describe, expect, it } from "vitest";
import type { MemoryStateStore, StateAdapter } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { useFileStates } from "./support/file-states.js";

const fileStates = useFileStates("al-memory-lists-");

/** 40 memory files written out of order, some multi-byte, some rewritten with other sizes, some deleted. */
async function seed(state: MemoryStateStore): Promise<void> {
  for (let index = 0; index < 40; index += 1) {
    const slot = (index * 17) % 40;
    await state.writeMemory(`${slot % 3 === 0 ? "users" : slot % 3 === 1 ? "users-old" : "notes"}/${String(slot).padStart(2, "0")}.md`, "é".repeat(slot));
  }
  for (let slot = 0; slot < 40; slot += 5) await state.writeMemory(`notes/${String(slot).padStart(2, "0")}.md`, "x".repeat(100 + slot));
  for (let slot = 0; slot < 40; slot += 7) await state.deleteMemory(`users/${String(slot).padStart(2, "0")}.md`);
}

/** What listing by filtering and sorting every file gives: the paths under `prefix` in code-unit order, sizes in UTF-8 bytes. */
async function expected(state: MemoryStateStore, prefix: string): Promise<Array<{ path: string; size: number }>> {
  const paths = (await state.listMemory()).filter((path) => path.startsWith(prefix));
  const entries = await Promise.all(paths.map(async (path) => ({ path, size: Buffer.byteLength((await state.readMemory(path))!.content, "utf8") })));
  return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

async function expectListsOf(state: MemoryStateStore): Promise<void> {
  const all = await state.listMemory();
  expect(all).toEqual([...all].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  expect(all).toHaveLength(40 + 5 - 2);
  expect(all).not.toContain("users/21.md");
  expect(all).toContain("notes/05.md");
  for (const prefix of ["", "users", "users/", "users-old/", "notes/0", "notes/05.md", "nothing/"]) {
    const entries = await state.listMemoryEntries!(prefix);
    expect(entries, prefix).toEqual(await expected(state, prefix));
    expect(await state.listMemory(prefix), prefix).toEqual(entries.map((entry) => entry.path));
    for (const limit of [0, 1, 3, 50]) {
      expect(await state.firstMemoryEntries!(prefix, limit), `${prefix} ${limit}`).toEqual({ entries: entries.slice(0, limit), total: entries.length });
    }
  }
  expect(await state.listMemoryEntries!("notes/05.md")).toEqual([{ path: "notes/05.md", size: 105 }]);
  expect(await state.listMemoryEntries!("users-old/01.md")).toEqual([{ path: "users-old/01.md", size: 2 }]);
}

describe.each([
  ["in-memory", async () => new InMemoryStateAdapter() as StateAdapter],
  ["file", async () => (await fileStates.open(fileStates.folder())) as StateAdapter],
])("memory listings on the %s state", (_name, make) => {
  it("list the files under a prefix in path order, each with its size as last written", async () => {
    const state = await make();
    await seed(state);
    await expectListsOf(state);
  });
});

describe("memory listings on the file state, opened again", () => {
  it("list the same from its log and from a snapshot", async () => {
    await fileStates.reopenedFromLogAndSnapshot(seed, expectListsOf);
  });
});
