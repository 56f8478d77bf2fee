import { AssemblyLineError } from "@assemblyline-agents/core";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { link, readFile, readdir, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const LOCK_FILE = "LOCK";
/** Held only while replacing a dead holder's LOCK, so two openers cannot both take it over. */
const TAKEOVER_FILE = "LOCK.takeover";
const ATTEMPTS = 100;
const RETRY_DELAY_MS = 20;

interface LockOwner {
  pid: number;
  host: string;
  token: string;
  /**
   * Which process, beyond its pid: pids are reused, and a container restarted on the same
   * folder runs as the same pid on the same host (1, or whatever its entrypoint makes it).
   * `process`: a random id per process (shared by every copy of this module in it);
   * `started`: where readable, the boot and the start time of the pid (Linux /proc).
   * Absent in LOCKs written before they were recorded.
   */
  process?: string;
  started?: string;
}

/** This process's id for LOCK files, on globalThis so that two copies of the package agree. */
const PROCESS_ID: string = ((globalThis as Record<symbol, string | undefined>)[Symbol.for("@assemblyline-agents/local.lockProcessId")] ??= randomBytes(8).toString("hex"));

/** A new LOCK (or guard) record for this process. */
function thisProcess(): LockOwner {
  const started = startOf(process.pid);
  return { pid: process.pid, host: hostname(), token: randomBytes(8).toString("hex"), process: PROCESS_ID, ...(started ? { started } : {}) };
}

/** The boot and start time of `pid` (Linux), or undefined where /proc cannot tell. */
function startOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ")".
    const starttime = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    return starttime === undefined ? undefined : `${boot}:${starttime}`;
  } catch {
    return undefined;
  }
}

/**
 * An exclusive, advisory lock on a state folder: a LOCK file naming the holder's
 * pid and host. It is created whole (written to a temp file, then hard-linked into
 * place, which fails if LOCK exists), so a reader never sees a half-written one.
 * A LOCK whose pid is dead on this host is stale and is taken over.
 */
export class FolderLock {
  private released = false;

  private constructor(
    readonly directory: string,
    private readonly owner: LockOwner,
  ) {}

  static async acquire(directory: string): Promise<FolderLock> {
    const owner = thisProcess();
    const lockPath = join(directory, LOCK_FILE);
    for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
      if (await createExclusive(directory, lockPath, owner)) {
        await removeDeadTempFiles(directory);
        return new FolderLock(directory, owner);
      }
      const holder = await readOwner(lockPath);
      if (holder === "missing") continue;
      if (holder !== "unreadable" && isAlive(holder)) throw lockedError(directory, holder);
      if (await takeOver(directory, lockPath, holder)) continue;
      await sleep(RETRY_DELAY_MS);
    }
    throw new AssemblyLineError("AL_ERR_STATE_LOCKED", `could not take the lock of state folder ${directory}`, {
      fix: `Another process keeps replacing ${join(directory, LOCK_FILE)}; stop the other Assembly Line processes using this folder.`,
      details: { directory },
    });
  }

  /** Remove LOCK if it is still ours. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const lockPath = join(this.directory, LOCK_FILE);
    const holder = await readOwner(lockPath);
    if (typeof holder === "object" && holder.token === this.owner.token) await unlink(lockPath).catch(ignoreMissing);
  }
}

async function createExclusive(directory: string, lockPath: string, owner: LockOwner): Promise<boolean> {
  const temp = join(directory, `LOCK.${owner.pid}.${owner.token}.tmp`);
  await writeFile(temp, JSON.stringify(owner));
  try {
    await link(temp, lockPath);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    await unlink(temp).catch(ignoreMissing);
  }
}

/**
 * Replace a stale LOCK under the takeover guard, re-checking under the guard that
 * LOCK still holds the dead owner's record. Returns false when another opener is
 * in the middle of a takeover.
 */
async function takeOver(directory: string, lockPath: string, stale: LockOwner | "unreadable"): Promise<boolean> {
  const guardPath = join(directory, TAKEOVER_FILE);
  // Created whole, like LOCK: an opener killed mid-takeover leaves a guard naming it, never an empty one.
  const guardOwner = thisProcess();
  if (!(await createExclusive(directory, guardPath, guardOwner))) {
    // A guard left by an opener that died mid-takeover would block everyone forever.
    const holder = await readOwner(guardPath);
    if (holder === "unreadable" || (typeof holder === "object" && !isAlive(holder))) await unlinkIfUnchanged(guardPath, holder);
    return false;
  }
  try {
    await unlinkIfUnchanged(lockPath, stale);
    return true;
  } finally {
    await unlinkIfUnchanged(guardPath, guardOwner);
  }
}

/** Remove `path` if it still holds `owner`'s record (or is still unreadable), so a newer file of the same name is left alone. */
async function unlinkIfUnchanged(path: string, owner: LockOwner | "unreadable"): Promise<void> {
  const current = await readOwner(path);
  const same = owner === "unreadable" ? current === "unreadable" : typeof current === "object" && current.token === owner.token;
  if (same) await unlink(path).catch(ignoreMissing);
}

/** Temp files of openers killed between writing and linking them; live openers' files are left alone. */
async function removeDeadTempFiles(directory: string): Promise<void> {
  for (const name of await readdir(directory)) {
    const match = /^LOCK\.(\d+)\.[0-9a-f]+\.tmp$/.exec(name);
    if (match && !isAlive({ pid: Number(match[1]), host: hostname(), token: "" })) {
      await unlink(join(directory, name)).catch(ignoreMissing);
    }
  }
}

async function readOwner(path: string): Promise<LockOwner | "missing" | "unreadable"> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<LockOwner>;
    if (typeof parsed.pid === "number" && typeof parsed.host === "string") {
      return {
        pid: parsed.pid,
        host: parsed.host,
        token: typeof parsed.token === "string" ? parsed.token : "",
        ...(typeof parsed.process === "string" ? { process: parsed.process } : {}),
        ...(typeof parsed.started === "string" ? { started: parsed.started } : {}),
      };
    }
  } catch {
    // an unreadable LOCK was not written by this code; treat it as stale
  }
  return "unreadable";
}

/**
 * A holder on another host cannot be checked, so it counts as alive. On this host, a
 * live pid is the holder only if it is the same process: this one (same process id),
 * or one started when the holder was (where /proc tells).
 */
function isAlive(owner: LockOwner): boolean {
  if (owner.host !== hostname()) return true;
  if (owner.pid === process.pid && owner.process !== undefined) return owner.process === PROCESS_ID;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (owner.started === undefined) return true;
  const started = startOf(owner.pid);
  return started === undefined || started === owner.started;
}

function lockedError(directory: string, holder: LockOwner): AssemblyLineError {
  const who = holder.pid === process.pid && holder.host === hostname() ? "this process (another FileStateAdapter)" : `pid ${holder.pid} on ${holder.host}`;
  return new AssemblyLineError("AL_ERR_STATE_LOCKED", `state folder ${directory} is locked by ${who}`, {
    fix: `Stop the process holding it (or close the other FileStateAdapter) before opening it again; one process may write a state folder at a time. If pid ${holder.pid} is not an Assembly Line process, delete ${join(directory, LOCK_FILE)}.`,
    details: { directory, pid: holder.pid, host: holder.host },
  });
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
}
