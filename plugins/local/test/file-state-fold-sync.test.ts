import { readdir } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { FileStateAdapter, type FileStateAdapterOptions } from "../src/index.js";
import { tempFolders } from "./support/state-folders.js";
import { collectWarnings, warningsDelivered } from "./support/process-warnings.js";

/*
 * A fold renames the new snapshot into place, then syncs the folder. If that sync fails, the rename is
 * done all the same: the new snapshot is what the next opening reads, and it deletes the logs before it.
 * A write that went into such a log after the rename would be lost. The folder's syncs are made to fail
 * through node:fs/promises: after the snapshot's rename, the next `failingSyncs` syncs of its folder.
 */

const injected = vi.hoisted(() => ({ failingSyncs: 0, failAfterRenameIn: undefined as string | undefined, directorySyncsFailed: 0 }));
vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs/promises")>();
  let armedFor: string | undefined;
  let left = 0;
  return {
    ...fs,
    rename: async (from: string, to: string) => {
      await fs.rename(from, to);
      if (basename(to) === "snapshot.json" && dirname(to) === injected.failAfterRenameIn && injected.failingSyncs > 0) {
        armedFor = dirname(to);
        left = injected.failingSyncs;
        injected.failingSyncs = 0;
      }
    },
    open: async (...args: Parameters<typeof fs.open>) => {
      const handle = await fs.open(...args);
      if (armedFor !== undefined && args[0] === armedFor && left > 0) {
        left -= 1;
        if (left === 0) armedFor = undefined;
        handle.sync = async () => {
          injected.directorySyncsFailed += 1;
          throw Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
        };
      }
      return handle;
    },
  };
});

const folders = tempFolders("al-file-state-fold-sync-");
const opened: FileStateAdapter[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((state) => state.close()));
  await folders.removeAll();
});

async function openState(options: FileStateAdapterOptions): Promise<FileStateAdapter> {
  const state = await FileStateAdapter.open(options);
  opened.push(state);
  return state;
}

/** Fail the next `count` syncs of `directory` after a snapshot is renamed into it, for this test only. */
function failFolderSyncsAfterRename(directory: string, count: number): void {
  injected.failAfterRenameIn = directory;
  injected.failingSyncs = count;
  injected.directorySyncsFailed = 0;
  onTestFinished(() => {
    injected.failAfterRenameIn = undefined;
    injected.failingSyncs = 0;
  });
}

const filesIn = async (directory: string) => (await readdir(directory)).filter((name) => name !== "LOCK").sort();

/** A folder whose log holds a few settings, closed: the next opening with compactAfterBytes 1 folds it. */
async function folderToFold(): Promise<string> {
  const directory = await folders.make();
  const state = await FileStateAdapter.open({ directory });
  for (let index = 0; index < 5; index += 1) await state.putSetting(`before-${index}`, index, { actor: "t" });
  await state.close();
  expect(await filesIn(directory)).toEqual(["log-0.wal"]);
  return directory;
}

/**
 * Open `directory` with a small fold threshold and write settings until the first fold began its log (it folds
 * log-0 into snapshot 1 in the background while writes go on in log-1), then one more, and close. Returns how many.
 */
async function writtenThroughBackgroundFold(directory: string): Promise<number> {
  const state = await openState({ directory, compactAfterBytes: 2_000, compactWhenSuperseded: 0 });
  let written = 0;
  while (!(await filesIn(directory)).includes("log-1.wal")) {
    await state.putSetting(`key-${written}`, "v".repeat(200), { actor: "t" });
    written += 1;
  }
  await state.putSetting("after", "acknowledged", { actor: "t" });
  await state.close();
  return written;
}

/** Reopen `directory` and find every write writtenThroughBackgroundFold acknowledged. */
async function expectEveryWrite(directory: string, written: number): Promise<void> {
  const reopened = await openState({ directory });
  expect(await reopened.getSetting("after")).toBe("acknowledged");
  for (let index = 0; index < written; index += 1) expect(await reopened.getSetting(`key-${index}`)).toBe("v".repeat(200));
}

describe("file state: the folder's sync fails after a fold renamed its snapshot into place", () => {
  it("on opening, writes go on after the new snapshot, and the next opening has them", async () => {
    const directory = await folderToFold();
    const warnings = collectWarnings();
    failFolderSyncsAfterRename(directory, 1);

    const state = await openState({ directory, compactAfterBytes: 1, compactWhenSuperseded: 0 });
    expect(injected.directorySyncsFailed).toBe(1);
    await state.putSetting("after", "acknowledged", { actor: "t" });
    await state.close();
    expect(await filesIn(directory)).toContain("snapshot.json");

    const reopened = await openState({ directory });
    expect(await reopened.getSetting("after")).toBe("acknowledged");
    expect(await reopened.getSetting("before-4")).toBe(4);
    // The fold was done, and said nothing failed.
    await warningsDelivered();
    expect(warnings).toEqual([]);
    expect(await filesIn(directory)).toEqual(["log-1.wal", "snapshot.json"]);
  });

  it("on opening, fails the opening when the folder cannot be synced again, and the next opening has every record", async () => {
    const directory = await folderToFold();
    failFolderSyncsAfterRename(directory, 2);

    const refused = await FileStateAdapter.open({ directory, compactAfterBytes: 1, compactWhenSuperseded: 0 }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE", message: expect.stringMatching(/could not be synced while opening it: EIO/) });
    expect(injected.directorySyncsFailed).toBe(2);

    const state = await openState({ directory });
    for (let index = 0; index < 5; index += 1) expect(await state.getSetting(`before-${index}`)).toBe(index);
    await state.putSetting("after", "acknowledged", { actor: "t" });
    await state.close();
    const reopened = await openState({ directory });
    expect(await reopened.getSetting("after")).toBe("acknowledged");
  });

  it("in the background, counts the fold as done, and removes the folded log once a sync of the folder succeeds", async () => {
    const directory = await folders.make();
    const warnings = collectWarnings();
    failFolderSyncsAfterRename(directory, 1);

    const written = await writtenThroughBackgroundFold(directory);
    await warningsDelivered();
    expect(injected.directorySyncsFailed).toBe(1);
    expect(warnings).toEqual([]);
    expect(await filesIn(directory)).toEqual(["log-1.wal", "snapshot.json"]);

    await expectEveryWrite(directory, written);
  });

  it("in the background, warns when the folder cannot be synced twice, and the next opening removes the folded log", async () => {
    const directory = await folders.make();
    const warnings = collectWarnings();
    failFolderSyncsAfterRename(directory, 2);

    const written = await writtenThroughBackgroundFold(directory);
    await warningsDelivered();
    expect(injected.directorySyncsFailed).toBe(2);
    expect(warnings.map((warning) => [(warning as Error & { code?: string }).code, warning.message])).toEqual([["AL_ERR_STATE_COMPACTION", expect.stringMatching(/could not be synced after its log was folded into a new snapshot: EIO/)]]);
    expect(await filesIn(directory)).toEqual(["log-0.wal", "log-1.wal", "snapshot.json"]);

    await expectEveryWrite(directory, written);
    expect(await filesIn(directory)).toEqual(["log-1.wal", "snapshot.json"]);
  });
});
