import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect } from "vitest";
import { FileStateAdapter, type FileStateAdapterOptions } from "@assemblyline-agents/local";

/**
 * File states a test file opens, each folder its own: every state still open is closed after each
 * test, even one that failed, and the folders are removed after the file. Call at the top of a test file.
 */
export function useFileStates(prefix: string) {
  const folders: string[] = [];
  const opened: FileStateAdapter[] = [];
  afterEach(async () => {
    for (const state of opened.splice(0)) await state.close();
  });
  afterAll(() => {
    for (const made of folders.splice(0)) rmSync(made, { recursive: true, force: true });
  });
  return {
    /** A new empty folder, removed after the file. */
    folder(): string {
      const made = mkdtempSync(join(tmpdir(), prefix));
      folders.push(made);
      return made;
    },
    /** Open the file state in `directory`; closed after the test unless `close` closed it first. */
    async open(directory: string, options: FileStateAdapterOptions = {}): Promise<FileStateAdapter> {
      const state = await FileStateAdapter.open({ directory, ...options });
      opened.push(state);
      return state;
    },
    async close(state: FileStateAdapter): Promise<void> {
      opened.splice(opened.indexOf(state), 1);
      await state.close();
    },
    /**
     * Seed a file state in a new folder, then hand `check` that state opened again twice: replayed
     * from its log, and read from a snapshot (a copy of the folder as seeded, folded on open, so
     * what the first check writes is not in it).
     */
    async reopenedFromLogAndSnapshot(seed: (state: FileStateAdapter) => Promise<void>, check: (state: FileStateAdapter) => Promise<void>): Promise<void> {
      const directory = this.folder();
      const first = await this.open(directory);
      await seed(first);
      await this.close(first);
      const copy = this.folder();
      cpSync(directory, copy, { recursive: true });
      // Replayed from the log.
      await check(await this.open(directory));
      // Folded into a snapshot on open (any log outgrows 1 byte), then read from it.
      await this.close(await this.open(copy, { compactAfterBytes: 1, compactWhenSuperseded: 0 }));
      expect(existsSync(join(copy, "snapshot.json"))).toBe(true);
      await check(await this.open(copy));
    },
  };
}
