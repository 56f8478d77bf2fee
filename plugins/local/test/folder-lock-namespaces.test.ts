import { isAssemblyLineError } from "@assemblyline-agents/core";
import { spawn, spawnSync, type ChildProcessByStdio } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { readFile, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { HEARTBEAT_MS, HEARTBEAT_STALE_MS } from "../src/state/folder-lock.js";
import { tempFolders } from "./support/state-folders.js";

/*
 * Two processes on one host, with one hostname, in different PID namespaces: containers with
 * --network=host, or compose services given the same `hostname:`, sharing the state folder's
 * volume. Neither can see the other's pid, so the lock is judged by the holder's heartbeat.
 */

const holderScript = fileURLToPath(new URL("./support/namespace-lock-holder.mjs", import.meta.url));
const folders = tempFolders("al-folder-lock-ns-");
const adapters: FileStateAdapter[] = [];
const children: ChildProcessByStdio<null, Readable, Readable>[] = [];
const timers: NodeJS.Timeout[] = [];
const handles: number[] = [];

afterEach(async () => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  for (const handle of handles.splice(0)) closeSync(handle);
  await Promise.all(adapters.splice(0).map((adapter) => adapter.close()));
  await Promise.all(
    children.splice(0).map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return undefined;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      return exited;
    }),
  );
  await folders.removeAll();
});

interface Opener {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** What the opener printed: {"opened":true,"pid":1} or {"refused":"<code>","message":"..."}. */
  outcome: Promise<{ opened?: boolean; pid?: number; refused?: string; message?: string }>;
  exited: Promise<unknown>;
}

/** Open `directory` in a new process in a PID namespace of its own (pid 1 there, as in a container), holding it until killed. */
function openInNewPidNamespace(directory: string): Opener {
  // --kill-child: the opener dies with unshare, so no test leaves one behind.
  const child = spawn("unshare", ["--pid", "--fork", "--kill-child", "--mount-proc", process.execPath, holderScript, directory], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const outcome = new Promise<{ opened?: boolean; refused?: string; message?: string }>((resolve, reject) => {
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const newline = stdout.indexOf("\n");
      if (newline >= 0) resolve(JSON.parse(stdout.slice(0, newline)));
    });
    child.once("exit", (code, signal) => reject(new Error(`the opener exited (${code ?? signal}) before it said whether it opened the folder:\n${stderr}`)));
  });
  return { child, outcome, exited };
}

/**
 * SIGKILL the opener itself (the node process unshare started, pid 1 in its namespace), as `docker kill`
 * does, and wait for it to die. Its namespace's number is kept taken (an open handle on it, closed
 * after the test) so that a new namespace gets another: the kernel reuses a free one's at once.
 */
async function killOpener(opener: Opener): Promise<void> {
  const unsharePid = opener.child.pid!;
  const [nodePid] = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, "utf8").trim().split(/\s+/).map(Number);
  expect(nodePid, "unshare's forked child, the opener").toBeGreaterThan(0);
  const namespace = openSync(`/proc/${nodePid}/ns/pid`, "r");
  handles.push(namespace);
  process.kill(nodePid!, "SIGKILL");
  // unshare waits for its child: its exit means the opener is dead and reaped.
  await opener.exited;
}

const lockOf = async (directory: string) => JSON.parse(await readFile(join(directory, "LOCK"), "utf8")) as { pid: number; host: string; token: string; pidNamespace?: string };

describe("the folder lock across PID namespaces", () => {
  beforeAll(() => {
    const probe = spawnSync("unshare", ["--pid", "--fork", "--kill-child", "--mount-proc", "true"], { encoding: "utf8" });
    if (probe.status !== 0) {
      throw new Error(
        `these tests run openers in PID namespaces of their own with "unshare --pid --fork --kill-child --mount-proc" (util-linux), which needs root (or CAP_SYS_ADMIN); here it failed: ${probe.error?.message ?? probe.stderr.trim()}. Run the suite as root (CI does, see .ci/run).`,
      );
    }
  });

  it("refuses a live holder in another PID namespace, and a new container takes over within the stale threshold once it is killed", async () => {
    const directory = await folders.make();
    const first = openInNewPidNamespace(directory);
    expect(await first.outcome).toMatchObject({ opened: true, pid: 1 });
    const firstLock = await lockOf(directory);
    expect(firstLock).toMatchObject({ pid: 1, host: hostname() });
    expect(firstLock.pidNamespace).toMatch(/ pid:\[\d+\]$/);

    // Another container: pid 1 too, same host name; its own pid 1 says nothing about the holder.
    const second = openInNewPidNamespace(directory);
    const refused = await second.outcome;
    expect(refused).toMatchObject({ refused: "AL_ERR_STATE_LOCKED" });
    expect(refused.message).toContain("another pid namespace");
    // And the host itself, whose pid 1 is a live process of its own.
    const fromHost = await FileStateAdapter.open({ directory }).catch((error: unknown) => error);
    expect(isAssemblyLineError(fromHost, "AL_ERR_STATE_LOCKED")).toBe(true);
    expect(await lockOf(directory)).toMatchObject({ token: firstLock.token });

    await killOpener(first);
    // The container restarted on the folder: pid 1 again, in a new namespace. It waits for the
    // dead holder's heartbeat to go stale (HEARTBEAT_STALE_MS), then takes the lock over by itself;
    // past its wait (HEARTBEAT_STALE_MS and two heartbeats) it would have been refused.
    const restarted = openInNewPidNamespace(directory);
    expect(await restarted.outcome).toMatchObject({ opened: true, pid: 1 });
    const restartedLock = await lockOf(directory);
    expect(restartedLock).toMatchObject({ pid: 1, host: hostname() });
    expect(restartedLock.token).not.toBe(firstLock.token);
    expect(restartedLock.pidNamespace).not.toBe(firstLock.pidNamespace);
  }, 4 * HEARTBEAT_STALE_MS);

  it("refuses a holder of another PID namespace whose LOCK keeps being touched", async () => {
    const directory = await folders.make();
    const lockPath = join(directory, "LOCK");
    await writeFile(lockPath, JSON.stringify({ pid: 1, host: hostname(), token: "elsewhere", process: "p", pidNamespace: "another-boot pid:[1]" }));
    const touch = setInterval(() => {
      const now = new Date();
      void utimes(lockPath, now, now).catch(() => undefined);
    }, HEARTBEAT_MS / 4);
    timers.push(touch);
    const error = await FileStateAdapter.open({ directory }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_STATE_LOCKED")).toBe(true);
    expect((error as Error).message).toContain("another pid namespace");
    expect((await lockOf(directory)).token).toBe("elsewhere");
  });

  it("takes over at once a LOCK of another PID namespace whose heartbeat stopped long ago", async () => {
    const directory = await folders.make();
    const lockPath = join(directory, "LOCK");
    await writeFile(lockPath, JSON.stringify({ pid: 1, host: hostname(), token: "gone", process: "p", pidNamespace: "another-boot pid:[1]" }));
    const longAgo = new Date(Date.now() - 3 * HEARTBEAT_STALE_MS);
    await utimes(lockPath, longAgo, longAgo);
    const adapter = await FileStateAdapter.open({ directory });
    adapters.push(adapter);
    expect(await lockOf(directory)).toMatchObject({ pid: process.pid });
  });

  it("refuses every call once another process took the lock over (a holder frozen past the stale threshold)", async () => {
    const directory = await folders.make();
    const adapter = await FileStateAdapter.open({ directory });
    adapters.push(adapter);
    await adapter.createRun({ id: "r1", agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
    // What another opener's takeover leaves: LOCK naming it.
    await writeFile(join(directory, "LOCK"), JSON.stringify({ pid: 1, host: hostname(), token: "taker", process: "p", pidNamespace: "another-boot pid:[1]" }));
    let refusal: unknown;
    // The holder notices on its next heartbeat.
    for (let attempt = 0; attempt < 4 * (HEARTBEAT_MS / 50) && refusal === undefined; attempt += 1) {
      refusal = await adapter.getRun("r1").then(
        () => undefined,
        (error: unknown) => error,
      );
      if (refusal === undefined) await sleep(50);
    }
    expect(isAssemblyLineError(refusal, "AL_ERR_STATE_LOCKED")).toBe(true);
    expect((refusal as Error).message).toContain("lost the lock");
    await expect(adapter.createRun({ id: "r2", agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } })).rejects.toMatchObject({
      code: "AL_ERR_STATE_LOCKED",
    });
    await adapter.close();
    // The LOCK it no longer holds is left to its holder.
    expect((await lockOf(directory)).token).toBe("taker");
  });
});
