import { isAssemblyLineError } from "@assemblyline-agents/core";
import { spawnSync } from "node:child_process";
import { closeSync, openSync, writeSync } from "node:fs";
import { mkdir, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { tempFolders } from "./support/state-folders.js";

/*
 * A real full disk: a small tmpfs mounted for the test (root, as CI runs; see .ci/run), filled
 * by another file, as logs, blobs or a sandbox on the same disk fill it, and emptied again.
 */

const folders = tempFolders("al-file-state-disk-full-");
const mounted: string[] = [];
const adapters: FileStateAdapter[] = [];

afterEach(async () => {
  await Promise.all(adapters.splice(0).map((adapter) => adapter.close()));
  for (const mountPoint of mounted.splice(0)) {
    const unmounted = spawnSync("umount", [mountPoint], { encoding: "utf8" });
    if (unmounted.status !== 0) throw new Error(`could not unmount the test's tmpfs at ${mountPoint}: ${unmounted.stderr}`);
  }
  await folders.removeAll();
});

/** A new folder with a tmpfs of `size` mounted on it. */
async function smallDisk(size: string): Promise<string> {
  const mountPoint = await folders.make();
  const mount = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", mountPoint], { encoding: "utf8" });
  if (mount.status !== 0) {
    throw new Error(
      `this test fills a real disk: it mounts a ${size} tmpfs, which needs root (or CAP_SYS_ADMIN); "mount -t tmpfs" failed here: ${mount.error?.message ?? mount.stderr.trim()}. Run the suite as root (CI does, see .ci/run).`,
    );
  }
  mounted.push(mountPoint);
  return mountPoint;
}

/** Write zeros to `path` until the disk is full; returns how many bytes went in. */
function fillDisk(path: string): number {
  const fd = openSync(path, "w");
  let bytes = 0;
  try {
    for (const chunk of [64 * 1024, 4096, 512, 1].map((size) => Buffer.alloc(size))) {
      for (;;) {
        try {
          bytes += writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOSPC") break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return bytes;
}

const newRun = (id: string, message = "hi") => ({ id, agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message, metadata: {} } });

/** A call's outcome, taken as it is made (so a failure is never unhandled while the test makes more calls). */
const settle = (call: Promise<unknown>): Promise<PromiseSettledResult<unknown>> => Promise.allSettled([call]).then(([outcome]) => outcome!);

/** Wait for every call; the ids acknowledged, and the errors of the rest. */
async function outcomes(calls: Array<[string, Promise<PromiseSettledResult<unknown>>]>): Promise<{ acknowledged: string[]; errors: unknown[] }> {
  const settled = await Promise.all(calls.map(([, call]) => call));
  return {
    acknowledged: calls.flatMap(([id], index) => (settled[index]!.status === "fulfilled" ? [id] : [])),
    errors: settled.flatMap((outcome) => (outcome.status === "rejected" ? [outcome.reason] : [])),
  };
}

const runIds = async (adapter: FileStateAdapter) => (await adapter.listRuns({ limit: 1_000 })).runs.map((run) => run.id).sort();

/** A state folder on a tmpfs of `size`, its adapter open, and where the file that fills the disk goes. */
async function stateOnSmallDisk(size: string): Promise<{ directory: string; adapter: FileStateAdapter; filler: string }> {
  const disk = await smallDisk(size);
  const directory = join(disk, "state");
  await mkdir(directory);
  const adapter = await FileStateAdapter.open({ directory });
  adapters.push(adapter);
  return { directory, adapter, filler: join(disk, "filler") };
}

/**
 * `call`'s outcome (its value, or its error) once it is no longer AL_ERR_STATE_UNAVAILABLE: a bounded
 * wait, as the first call after a failure reads the folder back and one within a second of the last
 * try is refused without touching the disk.
 */
async function onceAvailable(call: () => Promise<unknown>): Promise<unknown> {
  let outcome: unknown;
  for (let attempt = 0; attempt < 50; attempt += 1) {
    outcome = await call().catch((error: unknown) => error);
    if (!isAssemblyLineError(outcome, "AL_ERR_STATE_UNAVAILABLE")) return outcome;
    await sleep(100);
  }
  return outcome;
}

describe("FileStateAdapter on a disk that fills up", () => {
  it("goes on by itself once the disk has space again, holding exactly the calls it acknowledged", async () => {
    const { directory, adapter, filler } = await stateOnSmallDisk("1m");
    await adapter.createRun(newRun("before"));
    await adapter.appendEvents("before", [{ type: "step", data: { n: 1 } }]);
    const lock = await readFile(join(directory, "LOCK"), "utf8");

    expect(fillDisk(filler)).toBeGreaterThan(0);
    // Calls in flight as the disk runs out, in turns: small ones (which may fit the space the log
    // filled ahead of its records, or the rest of its last page), large ones (which do not), and
    // small ones in the same batch as a large one, or after a failure (the replay runs on a full disk).
    const calls: Array<[string, Promise<PromiseSettledResult<unknown>>]> = [];
    const turns = [["small", "small", "small"], ["small", "large", "small"], ["small", "small"], ["large"], ["small"]];
    for (const [turn, sizes] of turns.entries()) {
      const made = sizes.map((size, index): [string, Promise<PromiseSettledResult<unknown>>] => {
        const id = `during-${turn}-${index}`;
        return [id, settle(adapter.createRun(newRun(id, size === "large" ? "x".repeat(200_000) : "small")))];
      });
      calls.push(...made);
      await Promise.all(made.map(([, call]) => call));
    }
    calls.push(["before:event", settle(adapter.appendEvents("before", [{ type: "step", data: { pad: "y".repeat(200_000) } }]))]);
    const during = await outcomes(calls);
    expect(during.errors.length).toBeGreaterThan(0);
    for (const error of during.errors) expect(isAssemblyLineError(error, "AL_ERR_STATE_UNAVAILABLE")).toBe(true);

    await unlink(filler);
    const after = await onceAvailable(() => adapter.createRun(newRun("after")).then(() => "acknowledged"));
    expect(after).toBe("acknowledged");

    // What the failed calls wrote to the tables is gone, without a restart: the disk is the truth.
    const acknowledgedRuns = during.acknowledged.filter((id) => id.startsWith("during-"));
    const expected = ["after", "before", ...acknowledgedRuns].sort();
    expect(await runIds(adapter)).toEqual(expected);
    const events = (await adapter.listEvents("before")).map((event) => event.type);
    expect(events).toEqual(during.acknowledged.includes("before:event") ? ["run.created", "step", "step"] : ["run.created", "step"]);
    await adapter.appendEvents("before", [{ type: "later", data: {} }]);
    // The lock was held throughout, never released or taken again.
    expect(await readFile(join(directory, "LOCK"), "utf8")).toBe(lock);

    await adapter.close();
    const reopened = await FileStateAdapter.open({ directory });
    adapters.push(reopened);
    expect(await runIds(reopened)).toEqual(expected);
    expect((await reopened.listEvents("before")).map((event) => event.type)).toEqual([...events, "later"]);
  });

  it("refuses reads that saw a record that failed, and drops that record without a restart", async () => {
    const { adapter, filler } = await stateOnSmallDisk("512k");
    await adapter.createRun(newRun("kept"));
    fillDisk(filler);
    // Planned and applied to the tables at once; its write fails.
    const ghost = adapter.createRun(newRun("ghost", "x".repeat(300_000)));
    const sawGhost = adapter.getRun("ghost");
    await expect(ghost).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    await expect(sawGhost).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    await unlink(filler);
    const found = await onceAvailable(() => adapter.getRun("ghost").then((run) => ({ run })));
    expect(found).toEqual({ run: undefined });
    expect(await runIds(adapter)).toEqual(["kept"]);
  });

  it("fails a call whose reading back fails too (the log cannot be cut), and a later call tries again", async () => {
    const { directory, adapter, filler } = await stateOnSmallDisk("1m");
    await adapter.createRun(newRun("kept"));
    fillDisk(filler);
    await expect(adapter.createRun(newRun("refused", "x".repeat(300_000)))).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    // Append-only (chattr +a, which tmpfs keeps since Linux 6.0): the log cannot be opened to be cut.
    const log = join(directory, "log-0.wal");
    const appendOnly = (flag: "+a" | "-a") => {
      const changed = spawnSync("chattr", [flag, log], { encoding: "utf8" });
      if (changed.status !== 0) throw new Error(`chattr ${flag} ${log} failed (e2fsprogs' chattr, root and a kernel whose tmpfs keeps inode flags, 6.0 or later, are needed): ${changed.error?.message ?? changed.stderr.trim()}`);
    };
    appendOnly("+a");
    try {
      const replayFailed = await adapter.getRun("kept").catch((error: unknown) => error);
      expect(isAssemblyLineError(replayFailed, "AL_ERR_STATE_UNAVAILABLE")).toBe(true);
      expect((replayFailed as Error).message).toContain("reading the folder back to go on failed too");
    } finally {
      appendOnly("-a");
    }
    await unlink(filler);
    const kept = await onceAvailable(() => adapter.getRun("kept"));
    expect(kept).toMatchObject({ id: "kept" });
    expect(await runIds(adapter)).toEqual(["kept"]);
    await adapter.createRun(newRun("after"));
    await adapter.close();
    const reopened = await FileStateAdapter.open({ directory });
    adapters.push(reopened);
    expect(await runIds(reopened)).toEqual(["after", "kept"]);
  });
});
