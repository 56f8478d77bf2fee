import { AssemblyLineError, SANDBOX_COMMAND_MARK_VARIABLE, checkExecOptions, checkWriteContent, type ExecResult, type Sandbox, type SandboxExecOptions } from "@assemblyline-agents/core";
import type { ChildProcess } from "node:child_process";
import { constants } from "node:fs";
import { lstat, mkdir, open, readdir, readlink, realpath, rename, rm, stat, type FileHandle } from "node:fs/promises";
import { randomUUID } from "node:crypto";
import { basename, dirname, join, resolve } from "node:path";
import { CommandRecords } from "./command-records.js";
import { fsError, systemError } from "./fs-error.js";
import { commandMarker, killMarkedProcesses } from "./marked-processes.js";
import { openRegularFile, readRegularFile } from "./regular-file.js";
import { runShell } from "./run-shell.js";
import { MISSING, WORKSPACE, isInside, parseWorkspacePath, pathEscape, resolveInside } from "./workspace-path.js";

/** How many symlinks a write follows before giving up, as the kernel's ELOOP does. */
const MAX_SYMLINK_HOPS = 40;

export interface ExecDefaults {
  timeoutMs: number;
  maxOutputBytes: number;
  /** Variables every command sees, before WORKSPACE/HOME/TMPDIR/PWD and the call's own env. */
  env: Record<string, string>;
}

export interface LocalSandboxFolders {
  /** The workspace folder, already a realpath: what `/workspace` maps to. */
  workspace: string;
  /** HOME for commands, beside the workspace so tool caches do not litter it. */
  home: string;
  /** TMPDIR for commands. */
  tmp: string;
  /** Where each running command's process group is recorded, for a later process to stop after a crash. */
  commands: string;
}

type Entry = { path: string; type: "file" | "directory"; size: number };

/**
 * One run's workspace on the host: the file methods map `/workspace/...` onto
 * `folders.workspace` and refuse anything that resolves outside it. Commands run
 * with the real host folder as cwd (and in $WORKSPACE); this is a trusted
 * emulation, not isolation: a command can reach the whole host, and a command
 * racing a file call can swap a folder for a symlink between check and use.
 * The Docker sandbox gives a physical /workspace and real isolation.
 */
export class LocalSandbox implements Sandbox {
  private released = false;
  private readonly running = new Set<ChildProcess>();
  /** Calls on their way: close waits for them, so none writes into the folders after the adapter removes them. */
  private readonly calls = new Set<Promise<unknown>>();
  private readonly records: CommandRecords;

  constructor(
    readonly id: string,
    readonly folders: LocalSandboxFolders,
    private readonly defaults: ExecDefaults,
    /** Shared by every command of this sandbox in their environment (marked-processes.ts), to find what leaves a command's process group. */
    private readonly marker: string,
  ) {
    this.records = new CommandRecords(folders.commands);
  }

  /** What exec keeps of each output stream when a call gives no maxOutputBytes. */
  get maxOutputBytes(): number {
    return this.defaults.maxOutputBytes;
  }

  async readFile(path: string): Promise<Uint8Array> {
    return this.whileLive(() => this.#readFile(path));
  }

  async writeFile(path: string, content: Uint8Array | string): Promise<void> {
    return this.whileLive(() => this.#writeFile(path, content));
  }

  /** Removes a file, a symlink (not its target) or a folder with its contents; a missing path is not an error. `/workspace` itself is emptied. */
  async deleteFile(path: string): Promise<void> {
    return this.whileLive(() => this.#deleteFile(path));
  }

  /**
   * Everything under `path`, recursively, sorted, with logical paths (a file path
   * lists that file; a missing path lists nothing). A symlink is listed as what it
   * points at but not descended into; one pointing outside the workspace, or
   * nowhere, is left out, as is a name holding a newline (no file call takes one).
   */
  async listFiles(path: string): Promise<Entry[]> {
    return this.whileLive(() => this.#listFiles(path));
  }

  /**
   * `/bin/sh -c command` in the workspace (or `cwd`, a logical path under it).
   * The process sees the host folder, also as $WORKSPACE, not a literal
   * /workspace. On timeout its process group is killed: exitCode 124, timedOut true.
   */
  async exec(command: string, options: SandboxExecOptions = {}): Promise<ExecResult> {
    return this.whileLive(() => this.#exec(command, options));
  }

  /** Kill running commands, refuse further calls, and wait for the calls on their way, so the adapter removes the folders after their last write. */
  async close(): Promise<void> {
    this.released = true;
    for (const child of this.running) killGroup(child);
    this.running.clear();
    await Promise.allSettled(this.calls);
  }

  /**
   * Starts `call` if the sandbox is live, counted among the calls on their way until it settles,
   * after making the workspace folder again if a command removed it (`cd .. && rm -rf workspace`):
   * acquiring the key again returns this same sandbox, so nothing else would.
   */
  private whileLive<T>(call: () => Promise<T>): Promise<T> {
    this.assertLive();
    const pending = this.remakeWorkspace().then(call);
    this.calls.add(pending);
    const settled = () => this.calls.delete(pending);
    pending.then(settled, settled);
    return pending;
  }

  async #readFile(path: string): Promise<Uint8Array> {
    const { logical, real } = await this.resolveExisting(path, "read");
    try {
      return await readRegularFile(real, logical, this.id);
    } catch (error) {
      throw fsError(error, "read", logical);
    }
  }

  /**
   * Written beside the file, then renamed over it: a reader, or a write of the same file at the
   * same time, sees the old bytes or the new, never a mix, and a write cut short leaves the old.
   * That also leaves a hard link's other names (maybe outside the workspace) their content.
   */
  async #writeFile(path: string, content: Uint8Array | string): Promise<void> {
    const { logical, relative } = parseWorkspacePath(path);
    // Before the file's folders are made.
    checkWriteContent(content, logical);
    if (relative === "") throw fsError(systemError("EISDIR"), "write", logical);
    try {
      const target = await this.resolveForWrite(join(this.folders.workspace, relative), path);
      await mkdir(dirname(target), { recursive: true });
      await replaceFile(target, content, await writableFile(target, logical));
    } catch (error) {
      throw fsError(error, "write", logical);
    }
  }

  async #deleteFile(path: string): Promise<void> {
    const { logical, relative } = parseWorkspacePath(path);
    const root = this.folders.workspace;
    try {
      if (relative === "") {
        for (const name of await readdir(root)) await rm(join(root, name), { recursive: true, force: true });
        return;
      }
      // Check the parent only: rm removes a symlink itself and never follows one.
      const host = join(root, relative);
      const parent = await resolveInside(root, dirname(host), path);
      if (!parent.exists) return;
      await rm(join(parent.real, basename(host)), { recursive: true, force: true });
    } catch (error) {
      throw fsError(error, "delete", logical);
    }
  }

  async #listFiles(path: string): Promise<Entry[]> {
    const { logical, relative } = parseWorkspacePath(path);
    const entries: Entry[] = [];
    try {
      const { real, exists } = await resolveInside(this.folders.workspace, join(this.folders.workspace, relative), path);
      if (!exists) return [];
      const stats = await stat(real);
      if (!stats.isDirectory()) return [{ path: logical, type: "file", size: stats.size }];
      await this.walk(real, logical, entries);
    } catch (error) {
      throw fsError(error, "list", logical);
    }
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async #exec(command: string, options: SandboxExecOptions): Promise<ExecResult> {
    if (typeof command !== "string") throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", "exec(command): command is not a string", { fix: "Pass a shell command line." });
    // No process can be given an argument holding NUL: refused here rather than as Node's own TypeError.
    if (command.includes("\0")) throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", "exec(command): command holds a NUL byte, which no process argument can carry", { fix: "Remove the NUL byte from the command; write binary data to a file and have the command read it." });
    checkExecOptions(options);
    const timeoutMs = options.timeoutMs ?? this.defaults.timeoutMs;
    const maxOutputBytes = options.maxOutputBytes ?? this.defaults.maxOutputBytes;
    const { logical, real } = await this.resolveExisting(options.cwd ?? WORKSPACE, "use as cwd");
    try {
      if (!(await stat(real)).isDirectory()) throw systemError("ENOTDIR");
    } catch (error) {
      throw fsError(error, "use as cwd", logical);
    }
    const env = {
      ...this.defaults.env,
      HOME: this.folders.home,
      TMPDIR: this.folders.tmp,
      WORKSPACE: this.folders.workspace,
      PWD: real,
      ...options.env,
      [SANDBOX_COMMAND_MARK_VARIABLE]: commandMarker(this.marker),
    };
    try {
      await mkdir(this.folders.home, { recursive: true });
      await mkdir(this.folders.tmp, { recursive: true });
    } catch (error) {
      throw fsError(error, "create", "the command's HOME and TMPDIR folders");
    }
    let child: ChildProcess | null = null;
    let recorded: Promise<void> | undefined;
    // Released while the command's folders were checked and made: it must not start.
    this.assertLive();
    try {
      return await runShell({
        command,
        cwd: real,
        env,
        timeoutMs,
        maxOutputBytes,
        killEscaped: () => killMarkedProcesses(env[SANDBOX_COMMAND_MARK_VARIABLE]),
        track: (live) => {
          if (live) {
            // close() kills only what it finds running: a command spawned after it is killed here.
            if (this.released) killGroup(live);
            this.running.add((child = live));
            if (live.pid !== undefined) recorded = this.records.add(live.pid);
          } else if (child) this.running.delete(child);
        },
      });
    } finally {
      const pid = (child as ChildProcess | null)?.pid;
      if (recorded !== undefined && pid !== undefined) {
        await recorded;
        await this.records.remove(pid);
      }
    }
  }

  /**
   * mkdir never follows a symlink put in the folder's place, and each call's escape
   * checks still apply. When it cannot (something else is in the folder's place),
   * the call itself reports the workspace gone.
   */
  private async remakeWorkspace(): Promise<void> {
    await mkdir(this.folders.workspace, { recursive: true, mode: 0o700 }).catch(() => undefined);
  }

  private assertLive(): void {
    if (this.released) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `sandbox ${this.id} was released`, {
        fix: "Acquire the sandbox again from its adapter; a released sandbox's files are gone.",
        details: { id: this.id },
      });
    }
  }

  /** Resolve a path that must exist, through symlinks that stay inside the workspace. */
  private async resolveExisting(path: string, action: string): Promise<{ logical: string; real: string }> {
    const { logical, relative } = parseWorkspacePath(path);
    let resolved: { real: string; exists: boolean };
    try {
      resolved = await resolveInside(this.folders.workspace, join(this.folders.workspace, relative), path);
    } catch (error) {
      throw fsError(error, action, logical);
    }
    const { real, exists } = resolved;
    if (!exists) {
      throw new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `nothing at ${logical} in sandbox ${this.id}`, {
        fix: "List the folder first (listFiles) and use a path it returns.",
        details: { path: logical },
      });
    }
    return { logical, real };
  }

  /**
   * Where a write to `host` lands: the parent is resolved and checked, and a
   * symlink at the target is followed by hand (it may dangle, so realpath alone
   * cannot say where the write would create its file) and checked again.
   */
  private async resolveForWrite(host: string, given: string): Promise<string> {
    const root = this.folders.workspace;
    let target = host;
    for (let hop = 0; hop < MAX_SYMLINK_HOPS; hop += 1) {
      // A symlink to the workspace itself: writing it is writing a folder, as writing /workspace is, not an escape.
      if ((await realpath(target).catch(() => undefined)) === root) throw systemError("EISDIR");
      const parent = await resolveInside(root, dirname(target), given);
      const candidate = join(parent.real, basename(target));
      if (!isInside(root, candidate)) throw pathEscape(given, `resolves to a location outside ${WORKSPACE}`);
      let isLink = false;
      try {
        isLink = (await lstat(candidate)).isSymbolicLink();
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
      }
      if (!isLink) return candidate;
      target = resolve(parent.real, await readlink(candidate));
    }
    throw systemError("ELOOP");
  }

  /** Entries a running command removes mid-walk are skipped, not reported as errors. */
  private async walk(folder: string, logical: string, entries: Entry[]): Promise<void> {
    const gone = (error: unknown) => {
      if (!MISSING.has((error as NodeJS.ErrnoException).code ?? "")) throw error;
      return undefined;
    };
    const dirents = await readdir(folder, { withFileTypes: true }).catch(gone);
    for (const dirent of dirents ?? []) {
      if (dirent.name.includes("\n")) continue;
      const host = join(folder, dirent.name);
      const path = `${logical}/${dirent.name}`;
      if (dirent.isDirectory()) {
        entries.push({ path, type: "directory", size: 0 });
        await this.walk(host, path, entries);
      } else if (dirent.isFile()) {
        const stats = await lstat(host).catch(gone);
        if (stats) entries.push({ path, type: "file", size: stats.size });
      } else if (dirent.isSymbolicLink()) {
        const target = await realpath(host).catch(() => undefined);
        if (target === undefined || !isInside(this.folders.workspace, target)) continue;
        const stats = await stat(target).catch(gone);
        if (stats) entries.push(stats.isDirectory() ? { path, type: "directory", size: 0 } : { path, type: "file", size: stats.size });
      }
    }
  }
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

export function badOption(name: string, value: unknown, expected: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `sandbox option ${name} is ${JSON.stringify(value)}, not ${expected}`, {
    fix: `Pass ${name} as ${expected}, or omit it for the default.`,
    details: { option: name, value },
  });
}

/** What a write keeps of the file already at `target`; undefined when there is none. */
interface ReplacedFile {
  mode: number;
  uid: number;
  gid: number;
  links: number;
}

/**
 * The file at `target`, opened for writing (never truncated) to check it may be written, as writing
 * it in place would need: a folder, a FIFO or a device there is refused, as is a file this user may not write.
 */
async function writableFile(target: string, logical: string): Promise<ReplacedFile | undefined> {
  let opened: Awaited<ReturnType<typeof openRegularFile>>;
  try {
    opened = await openRegularFile(target, constants.O_WRONLY, logical, "write");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  await opened.handle.close();
  const { mode, uid, gid, nlink } = opened.stats;
  return { mode: mode & 0o7777, uid, gid, links: nlink };
}

/**
 * Write `content` at `target` whole: to a fresh name in the same folder, then renamed over it,
 * keeping an existing file's mode, and its owner where this user may give it. A folder this user
 * may not write, holding a file it may, is written in place, as a command would write it.
 */
async function replaceFile(target: string, content: Uint8Array | string, existing: ReplacedFile | undefined): Promise<void> {
  const temporary = join(dirname(target), `.al-write-${randomUUID()}`);
  let handle: FileHandle;
  try {
    handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, existing?.mode ?? 0o644);
  } catch (error) {
    if (existing && existing.links === 1 && ["EACCES", "EPERM"].includes((error as NodeJS.ErrnoException).code ?? "")) return writeInPlace(target, content);
    throw error;
  }
  try {
    try {
      await handle.writeFile(content);
      if (existing) {
        const made = await handle.stat();
        // Only root may give a file away: another owner's file becomes this user's, as a command's copy would.
        if (made.uid !== existing.uid || made.gid !== existing.gid) await handle.chown(existing.uid, existing.gid).catch(() => undefined);
        await handle.chmod(existing.mode);
      }
    } finally {
      await handle.close();
    }
    await rename(temporary, target);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

async function writeInPlace(target: string, content: Uint8Array | string): Promise<void> {
  const handle = await open(target, constants.O_WRONLY | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}
