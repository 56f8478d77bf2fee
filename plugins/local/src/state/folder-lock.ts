import { AssemblyLineError } from "@assemblyline-agents/core";
import { randomBytes } from "node:crypto";
import { fstatSync, readFileSync, readdirSync, readlinkSync } from "node:fs";
import { link, open, readdir, stat, unlink, utimes, type FileHandle } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const LOCK_FILE = "LOCK";
/** Held only while replacing a dead holder's LOCK, so two openers cannot both take it over. */
const TAKEOVER_FILE = "LOCK.takeover";
const RETRY_DELAY_MS = 20;
/** How often the holder touches LOCK (its mtime), so that a process that cannot check its pid sees it is alive. */
export const HEARTBEAT_MS = 2_000;
/**
 * A LOCK of a holder judged by its heartbeat (see `judge`) whose mtime stood still this long is
 * stale: five missed heartbeats, so a holder whose event loop is busy for a few seconds keeps it.
 */
export const HEARTBEAT_STALE_MS = 5 * HEARTBEAT_MS;
/** How long a look at this holder's own LOCK answers later reads and plans (see heldLately). */
const RECHECK_MS = 20;
/** How often an opener looks at a LOCK whose heartbeat it waits for. */
const WATCH_DELAY_MS = 100;
/** How long an opener tries before it gives up: long enough for a stopped heartbeat to become stale. */
const ACQUIRE_TIMEOUT_MS = HEARTBEAT_STALE_MS + 2 * HEARTBEAT_MS;

interface LockOwner {
  pid: number;
  host: string;
  token: string;
  /**
   * Which process, beyond its pid: pids are reused, and a container restarted on the same
   * folder runs as the same pid on the same host (1, or whatever its entrypoint makes it).
   * `started`: where readable, the boot and the start time of the pid (Linux /proc), which every
   * thread of the process reads alike;
   * `process`: a random id per thread (shared by every copy of this module in it; a worker thread
   * has a globalThis of its own), which tells this process from an earlier one only where /proc
   * cannot tell (see pidIsHolder).
   * Absent in LOCKs written before they were recorded.
   */
  process?: string;
  started?: string;
  /**
   * Where the pid means something (Linux): the boot and the pid namespace, `<boot id> pid:[<inode>]`.
   * A holder in another one (a container sharing the host's name and the folder) cannot be checked
   * by its pid, and is judged by its heartbeat instead. Absent in LOCKs written before it was recorded.
   */
  pidNamespace?: string;
}

/** A LOCK (or guard) as read: its record, and when it was last touched (its mtime, in ms). */
interface LockHolder extends LockOwner {
  heartbeatAt: number;
}

/** What an opener can tell of a holder: alive, dead, or only by whether its heartbeat goes on. */
type Liveness = "alive" | "dead" | "heartbeat";

/** This thread's id for LOCK files, on globalThis so that two copies of the package agree (see LockOwner.process). */
const PROCESS_ID: string = ((globalThis as Record<symbol, string | undefined>)[Symbol.for("@assemblyline-agents/local.lockProcessId")] ??= randomBytes(8).toString("hex"));

/** A new LOCK (or guard) record for this process. */
function thisProcess(): LockOwner {
  const started = startOf(process.pid);
  const pidNamespace = ownPidNamespace();
  return {
    pid: process.pid,
    host: hostname(),
    token: randomBytes(8).toString("hex"),
    process: PROCESS_ID,
    ...(started ? { started } : {}),
    ...(pidNamespace ? { pidNamespace } : {}),
  };
}

/** The boot and start time of `pid` (Linux), or undefined where /proc cannot tell. */
function startOf(pid: number): string | undefined {
  const starttime = procStatFields(pid)?.[19];
  try {
    return starttime === undefined ? undefined : `${bootId()}:${starttime}`;
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` has died but is not reaped yet (Linux: every thread in state Z, zombie, or X, dead):
 * it answers kill(pid, 0) and keeps its start time, yet holds no file and writes nothing. Where no
 * init reaps orphans (a container without one), a killed holder stays so until the container ends.
 * /proc/<pid>/stat shows the main thread alone, a zombie too once it exited while other threads run
 * (Node.js exiting while a thread-pool thread is stuck in a write to hung storage): those can still
 * write, so each thread is looked at; where that cannot be told, the holder counts as alive.
 */
function isDeadUnreaped(pid: number): boolean {
  if (!isDeadState(procStatFields(pid)?.[0])) return false;
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threadCount(pid) === 1;
  }
  // A thread whose stat is gone since the listing has exited (it reads as the process's does otherwise).
  return threads.every((thread) => {
    const state = procStatFields(pid, thread)?.[0];
    return state === undefined || isDeadState(state);
  });
}

const isDeadState = (state: string | undefined): boolean => state === "Z" || state === "X";

/** The Threads: count of /proc/<pid>/status, or undefined where /proc cannot tell. */
function threadCount(pid: number): number | undefined {
  try {
    const threads = /^Threads:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return threads === undefined ? undefined : Number(threads);
  } catch {
    return undefined;
  }
}

/**
 * The fields of /proc/<pid>/stat (or of one thread's, /proc/<pid>/task/<thread>/stat) from the third
 * (state) on, or undefined where /proc cannot tell.
 */
function procStatFields(pid: number, thread?: string): string[] | undefined {
  let stat: string;
  try {
    stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ")".
  const close = stat.lastIndexOf(")");
  return close < 0 ? undefined : stat.slice(close + 2).split(" ");
}

function bootId(): string {
  return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
}

let pidNamespace: string | undefined | null = null;
/**
 * This process's boot and pid namespace (Linux), or undefined where /proc cannot tell. With the
 * boot: the first namespace has the same inode on every machine and after every reboot.
 */
function ownPidNamespace(): string | undefined {
  if (pidNamespace === null) {
    try {
      pidNamespace = `${bootId()} ${readlinkSync("/proc/self/ns/pid")}`;
    } catch {
      pidNamespace = undefined;
    }
  }
  return pidNamespace;
}

/**
 * An exclusive, advisory lock on a state folder: a LOCK file naming the holder's
 * pid and host. It is created whole (written to a temp file, then hard-linked into
 * place, which fails if LOCK exists), so a reader never sees a half-written one.
 * A LOCK whose holder is dead is stale and is taken over: on this host and in this
 * pid namespace, when its pid is gone (or is another process now); in another pid
 * namespace on this host (a container sharing the host's name), where the pid tells
 * nothing, when its heartbeat stopped: the holder touches LOCK every HEARTBEAT_MS,
 * and an opener waits until it sees the mtime move (alive: refused) or stand still
 * for HEARTBEAT_STALE_MS (dead: taken over). A holder on another host counts as alive.
 * The holder keeps its LOCK file open: a takeover (or a deletion) unlinks that file, so
 * `stillHeld` tells with one fstat, right before a write, what the heartbeat tells only
 * every HEARTBEAT_MS.
 */
export class FolderLock {
  private released = false;
  private readonly heartbeat: NodeJS.Timeout;
  private beating: Promise<void> | undefined;
  private lostTo: LockOwner | "missing" | "unreadable" | undefined;
  /** When stillHeld last looked (performance.now()); -Infinity before the first look. */
  private checkedAt = Number.NEGATIVE_INFINITY;

  private constructor(
    readonly directory: string,
    private readonly owner: LockOwner,
    /** The LOCK file this holder created, open until release. */
    private readonly lockFile: FileHandle,
  ) {
    this.heartbeat = setInterval(() => {
      this.beating ??= this.beat().finally(() => (this.beating = undefined));
    }, HEARTBEAT_MS).unref();
  }

  static async acquire(directory: string): Promise<FolderLock> {
    const owner = thisProcess();
    const lockPath = join(directory, LOCK_FILE);
    const deadline = performance.now() + ACQUIRE_TIMEOUT_MS;
    /** The holder whose heartbeat is being watched: its token, its LOCK's mtime when first read, and when that was. */
    let watched: { token: string; heartbeatAt: number; since: number } | undefined;
    for (;;) {
      const lockFile = await createExclusive(directory, lockPath, owner);
      if (lockFile) {
        try {
          await removeDeadTempFiles(directory);
        } catch (error) {
          await lockFile.close();
          await unlinkIfUnchanged(lockPath, owner);
          throw error;
        }
        return new FolderLock(directory, owner, lockFile);
      }
      const holder = await readOwner(lockPath);
      if (holder === "missing") continue;
      let stale = true;
      if (holder !== "unreadable") {
        const liveness = judge(holder);
        if (liveness === "alive") throw lockedError(directory, holder);
        if (liveness === "heartbeat") {
          if (watched?.token !== holder.token) watched = { token: holder.token, heartbeatAt: holder.heartbeatAt, since: performance.now() };
          else if (watched.heartbeatAt !== holder.heartbeatAt) throw lockedError(directory, holder);
          stale = Date.now() - holder.heartbeatAt > HEARTBEAT_STALE_MS || performance.now() - watched.since > HEARTBEAT_STALE_MS;
        }
      }
      if (stale && (await takeOver(directory, lockPath, holder))) continue;
      if (performance.now() > deadline) {
        throw new AssemblyLineError("AL_ERR_STATE_LOCKED", `could not take the lock of state folder ${directory}`, {
          fix: `Another process keeps replacing ${join(directory, LOCK_FILE)}; stop the other Assembly Line processes using this folder.`,
          details: { directory },
        });
      }
      await sleep(stale ? RETRY_DELAY_MS : WATCH_DELAY_MS);
    }
  }

  /**
   * This holder's random token, as its LOCK records it: names the holder's temp files apart from
   * any other holder's, whose pid may be this one's (another pid namespace).
   */
  get token(): string {
    return this.owner.token;
  }

  /**
   * Whether LOCK no longer names this holder: another opener took it over (it judged this
   * process dead: its heartbeat stood still, a process frozen for longer than HEARTBEAT_STALE_MS)
   * or it was deleted. Nothing may be written to the folder then.
   */
  get lost(): boolean {
    return this.lostTo !== undefined;
  }

  /**
   * Whether this process still holds the lock, checked now: false once `lost`, or once the LOCK
   * file it created has no name left (a takeover, like a deletion, unlinks it before a new LOCK
   * is linked into place), which then makes it `lost`. One fstat and no path lookup: cheap
   * enough to make before every write to the folder, where the heartbeat looks only every
   * HEARTBEAT_MS, and a holder frozen past HEARTBEAT_STALE_MS would otherwise write once
   * more over the new holder's records when it wakes.
   */
  /**
   * stillHeld for a call that only reads or plans: answered from a check made within
   * RECHECK_MS, the rest of the time by one. A takeover needs this holder's heartbeat to have
   * stood still for HEARTBEAT_STALE_MS, so a holder that was frozen checks again on its first
   * call after waking; one fstat per call cost reads several times their own time.
   */
  heldLately(): boolean {
    if (this.lostTo === undefined && !this.released && performance.now() - this.checkedAt < RECHECK_MS) return true;
    return this.stillHeld();
  }

  stillHeld(): boolean {
    if (this.lostTo !== undefined) return false;
    if (this.released) return false;
    this.checkedAt = performance.now();
    let links: number;
    try {
      links = fstatSync(this.lockFile.fd).nlink;
    } catch {
      // Nothing known: the heartbeat reads LOCK itself.
      return true;
    }
    if (links > 0) return true;
    this.lostTo = currentHolder(join(this.directory, LOCK_FILE));
    clearInterval(this.heartbeat);
    return false;
  }

  /** The error for a call made after the lock was lost. */
  lostError(): AssemblyLineError {
    const holder = this.lostTo;
    const now = typeof holder === "object" ? `pid ${holder.pid} on ${holder.host} holds it now` : "its LOCK file is gone";
    return new AssemblyLineError("AL_ERR_STATE_LOCKED", `this process lost the lock of state folder ${this.directory}: ${now}`, {
      fix: `Stop this process: another one writes the folder now. A holder loses its lock when its heartbeat stops for ${HEARTBEAT_STALE_MS / 1000} s (a process frozen that long) or when ${join(this.directory, LOCK_FILE)} is deleted.`,
      details: { directory: this.directory },
    });
  }

  /** Touch LOCK, if it still names this holder. */
  private async beat(): Promise<void> {
    if (this.released || this.lostTo) return;
    const lockPath = join(this.directory, LOCK_FILE);
    try {
      const current = await readOwner(lockPath);
      if (typeof current !== "object" || current.token !== this.owner.token) {
        if (!this.released) this.lostTo = current;
        clearInterval(this.heartbeat);
        return;
      }
      const now = new Date();
      await utimes(lockPath, now, now);
    } catch {
      // Tried again on the next one: an opener in another namespace takes the lock over only once none came for HEARTBEAT_STALE_MS.
    }
  }

  /** Stop the heartbeat, and remove LOCK if it is still ours. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.heartbeat);
    await this.beating;
    // Closed first: where an open file's name outlives its unlink (Windows), a new LOCK could not be linked until then.
    await this.lockFile.close().catch(() => undefined);
    const lockPath = join(this.directory, LOCK_FILE);
    const holder = await readOwner(lockPath);
    if (typeof holder === "object" && holder.token === this.owner.token) await unlink(lockPath).catch(ignoreMissing);
  }
}

/** Create `path` whole, holding `owner`'s record: a handle on the file created, or undefined if `path` exists. */
async function createExclusive(directory: string, path: string, owner: LockOwner): Promise<FileHandle | undefined> {
  const temp = join(directory, `LOCK.${owner.pid}.${owner.token}.tmp`);
  const handle = await open(temp, "w");
  try {
    await handle.writeFile(JSON.stringify(owner));
    await link(temp, path);
    return handle;
  } catch (error) {
    await handle.close();
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return undefined;
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
  const guard = await createExclusive(directory, guardPath, guardOwner);
  if (!guard) {
    // A guard left by an opener that died mid-takeover would block everyone forever.
    const holder = await readOwner(guardPath);
    if (holder === "unreadable" || (typeof holder === "object" && guardIsStale(holder))) await unlinkIfUnchanged(guardPath, holder);
    return false;
  }
  await guard.close();
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

/**
 * Temp files of openers killed between writing and linking them; live openers' files are left alone.
 * The name holds the opener's pid but not its pid namespace: a file is removed only once it is older
 * than HEARTBEAT_STALE_MS too (a live opener links it within moments), as the pid may be another
 * namespace's.
 */
async function removeDeadTempFiles(directory: string): Promise<void> {
  for (const name of await readdir(directory)) {
    const match = /^LOCK\.(\d+)\.[0-9a-f]+\.tmp$/.exec(name);
    if (!match || judge({ pid: Number(match[1]), host: hostname(), token: "" }) !== "dead") continue;
    const path = join(directory, name);
    const touched = await stat(path).then(({ mtimeMs }) => mtimeMs, () => undefined);
    if (touched !== undefined && Date.now() - touched > HEARTBEAT_STALE_MS) await unlink(path).catch(ignoreMissing);
  }
}

/** The record in a LOCK (or guard) file and its mtime, read through one handle so that both are of the same file. */
async function readOwner(path: string): Promise<LockHolder | "missing" | "unreadable"> {
  let text: string;
  let heartbeatAt: number;
  try {
    const handle = await open(path, "r");
    try {
      text = await handle.readFile("utf8");
      heartbeatAt = (await handle.stat()).mtimeMs;
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    throw error;
  }
  return ownerOf(text, heartbeatAt);
}

/** Who holds the LOCK at `path` now, read at once: for the error of a holder that finds it lost the lock. */
function currentHolder(path: string): LockOwner | "missing" | "unreadable" {
  try {
    return ownerOf(readFileSync(path, "utf8"), 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "unreadable";
  }
}

/** A LOCK (or guard) file's record, parsed. */
function ownerOf(text: string, heartbeatAt: number): LockHolder | "unreadable" {
  try {
    const parsed = JSON.parse(text) as Partial<LockOwner>;
    if (typeof parsed.pid === "number" && typeof parsed.host === "string") {
      return {
        pid: parsed.pid,
        host: parsed.host,
        token: typeof parsed.token === "string" ? parsed.token : "",
        ...(typeof parsed.process === "string" ? { process: parsed.process } : {}),
        ...(typeof parsed.started === "string" ? { started: parsed.started } : {}),
        ...(typeof parsed.pidNamespace === "string" ? { pidNamespace: parsed.pidNamespace } : {}),
        heartbeatAt,
      };
    }
  } catch {
    // an unreadable LOCK was not written by this code; treat it as stale
  }
  return "unreadable";
}

/**
 * A holder on another host cannot be checked, so it counts as alive. Nor can one on this
 * host in another pid namespace (or boot): its pid is not ours to look up, and it is judged
 * by its heartbeat (see FolderLock). In ours, a live pid is the holder only if it is the
 * same process: this one (same process id), or one started when the holder was (where
 * /proc tells). A LOCK written before namespaces were recorded is judged by its pid.
 */
function judge(owner: LockOwner): Liveness {
  if (owner.host !== hostname()) return "alive";
  if (owner.pidNamespace !== undefined && owner.pidNamespace !== ownPidNamespace()) return "heartbeat";
  return pidIsHolder(owner) ? "alive" : "dead";
}

/** A takeover guard is held for moments, and never touched: one of another pid namespace is stale once older than HEARTBEAT_STALE_MS. */
function guardIsStale(holder: LockHolder): boolean {
  const liveness = judge(holder);
  return liveness === "dead" || (liveness === "heartbeat" && Date.now() - holder.heartbeatAt > HEARTBEAT_STALE_MS);
}

/**
 * Whether the process `owner` names is alive. With this process's pid: this process (a second
 * adapter, maybe on a worker thread) when it started when the holder did; an earlier one whose
 * pid this process got (a restarted container) otherwise. Where /proc cannot tell, the process id
 * tells, though a worker thread has an id of its own. A pid that died and was not reaped (see
 * isDeadUnreaped) is dead.
 */
function pidIsHolder(owner: LockOwner): boolean {
  if (owner.pid === process.pid) {
    const started = owner.started === undefined ? undefined : startOf(process.pid);
    if (started !== undefined) return started === owner.started;
    if (owner.process !== undefined) return owner.process === PROCESS_ID;
  }
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (isDeadUnreaped(owner.pid)) return false;
  if (owner.started === undefined) return true;
  const started = startOf(owner.pid);
  return started === undefined || started === owner.started;
}

function lockedError(directory: string, holder: LockOwner): AssemblyLineError {
  const elsewhere = judge(holder) === "heartbeat";
  const who =
    holder.pid === process.pid && holder.host === hostname() && !elsewhere
      ? "this process (another FileStateAdapter)"
      : `pid ${holder.pid} on ${holder.host}${elsewhere ? " in another pid namespace (another container), whose heartbeat goes on" : ""}`;
  return new AssemblyLineError("AL_ERR_STATE_LOCKED", `state folder ${directory} is locked by ${who}`, {
    fix: `Stop the process holding it (or close the other FileStateAdapter) before opening it again; one process may write a state folder at a time. If pid ${holder.pid} is not an Assembly Line process, delete ${join(directory, LOCK_FILE)}.`,
    details: { directory, pid: holder.pid, host: holder.host },
  });
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
}
