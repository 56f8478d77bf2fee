import { posix } from "node:path";
import type Docker from "dockerode";
import { AssemblyLineError, MAX_READ_BYTES, checkExecOptions, folderRefusalError, type ExecResult, type Sandbox, type SandboxExecOptions } from "@assemblyline-agents/core";
import { engineCall } from "../engine.js";
import { execInContainer, toExecResult, type RawExecResult } from "./exec.js";
import { pack } from "./single-file-tar.js";
import { WORKSPACE, pathEscape, workspacePath } from "./workspace-path.js";

export interface ExecDefaults {
  timeoutMs: number;
  maxOutputBytes: number;
  env: Record<string, string>;
  user: string | undefined;
  engineTimeoutMs: number;
}

type Entry = { path: string; type: "file" | "directory"; size: number };

/** How long a file operation's helper command may take. */
const FILE_OP_TIMEOUT_MS = 60_000;

/*
 * File operations run small POSIX shell scripts inside the container (busybox
 * and coreutils both suffice), with the path as an argument, never spliced into
 * the script. `inside` resolves symlinks with readlink -f and refuses anything
 * that lands outside /workspace. Exit codes: 2 missing, 3 wrong kind, 4 escape.
 * `prepareWrite` prints the existing file's mode and owner (or "new"), then the
 * real path to write: a symlink's target, as writing through a link does.
 */
const INSIDE = 'inside() { case "$1" in /workspace|/workspace/*) return 0;; *) return 1;; esac; }';
const SCRIPTS = {
  read: `${INSIDE}
[ -e "$1" ] || exit 2
real=$(readlink -f -- "$1") && inside "$real" || exit 4
[ -f "$real" ] || exit 3
exec cat -- "$real"`,
  prepareWrite: `${INSIDE}
parent=$(dirname -- "$1")
probe=$parent
while [ ! -e "$probe" ] && [ ! -L "$probe" ]; do probe=$(dirname -- "$probe"); done
real=$(readlink -f -- "$probe") && inside "$real" || exit 4
mkdir -p -- "$parent" 2>/dev/null
real=$(readlink -f -- "$parent") && inside "$real" || exit 4
target="$real/\${1##*/}"
if [ -L "$1" ]; then target=$(readlink -f -- "$1") && inside "$target" || exit 4; fi
[ -d "$target" ] && exit 3
if [ -f "$target" ]; then stat -c '%a %u %g' -- "$target"; else echo new; fi
printf '%s\\n' "$target"`,
  delete: `${INSIDE}
if [ "$1" = /workspace ]; then find /workspace -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; exit 0; fi
parent=$(readlink -f -- "$(dirname -- "$1")") || exit 0
inside "$parent" || exit 4
rm -rf -- "$parent/$(basename -- "$1")"`,
  list: `${INSIDE}
[ -e "$1" ] || exit 0
real=$(readlink -f -- "$1") && inside "$real" || exit 0
if [ -d "$real" ]; then find "$real" -mindepth 1 \\( -type f -o -type d \\) -exec stat -c '%F|%s|%n' -- {} +; else stat -c '%F|%s|%n' -- "$real"; fi`,
};

/** One run's container: files and a shell at a physical /workspace. */
export class DockerSandbox implements Sandbox {
  private owner: Promise<{ uid: number; gid: number }> | undefined;

  constructor(
    readonly id: string,
    readonly container: Docker.Container,
    private readonly defaults: ExecDefaults,
  ) {}

  async readFile(path: string): Promise<Uint8Array> {
    const logical = workspacePath(path);
    const result = await this.script("read", logical, MAX_READ_BYTES);
    this.check(result, "read", logical, path);
    return new Uint8Array(result.stdout);
  }

  async writeFile(path: string, content: Uint8Array | string): Promise<void> {
    const logical = workspacePath(path);
    if (logical === WORKSPACE) throw this.kindError("write", logical, "is the workspace folder itself");
    const prepared = await this.script("prepareWrite", logical);
    this.check(prepared, "write", logical, path);
    // Only the line ends are the script's: a name may end in a space.
    const output = prepared.stdout.toString("utf8").replace(/\n$/, "");
    const split = output.indexOf("\n");
    const [existing, target] = [output.slice(0, split), output.slice(split + 1)];
    const kept = /^([0-7]+) (\d+) (\d+)$/.exec(existing);
    // An existing file keeps its mode and owner, as a write into it does; a new one belongs to the user commands run as.
    const entry = kept ? { mode: parseInt(kept[1]!, 8), uid: Number(kept[2]), gid: Number(kept[3]) } : { mode: 0o644, ...(await this.fileOwner()) };
    const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : Buffer.from(content);
    const archive = await pack(posix.basename(target), bytes, entry);
    await engineCall(`writing ${logical}`, () => this.container.putArchive(archive, { path: posix.dirname(target) }));
  }

  /** Removes a file or a folder with its contents; a missing path is not an error; `/workspace` itself is emptied. */
  async deleteFile(path: string): Promise<void> {
    const logical = workspacePath(path);
    this.check(await this.script("delete", logical), "delete", logical, path);
  }

  /** Everything under `path`, recursively, sorted (a file lists itself; a missing path lists nothing). */
  async listFiles(path: string): Promise<Entry[]> {
    const logical = workspacePath(path);
    const result = await this.script("list", logical);
    this.check(result, "list", logical, path);
    const entries: Entry[] = [];
    for (const line of result.stdout.toString("utf8").split("\n")) {
      const match = /^([^|]+)\|(\d+)\|(\/workspace\/.*)$/.exec(line);
      if (!match) continue;
      const [, kind, size, entryPath] = match as unknown as [string, string, string, string];
      if (kind === "directory") entries.push({ path: entryPath, type: "directory", size: 0 });
      else if (kind.startsWith("regular")) entries.push({ path: entryPath, type: "file", size: Number(size) });
    }
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** `/bin/sh -c command` in the container at `cwd` (default /workspace); a timeout kills its process tree (exit 124). */
  async exec(command: string, options: SandboxExecOptions = {}): Promise<ExecResult> {
    if (typeof command !== "string") throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", "exec(command): command is not a string", { fix: "Pass a shell command line." });
    checkExecOptions(options);
    const cwd = workspacePath(options.cwd ?? WORKSPACE);
    const raw = await execInContainer(this.container, {
      argv: ["/bin/sh", "-c", command],
      cwd,
      env: { ...this.defaults.env, WORKSPACE, ...options.env },
      user: this.defaults.user,
      engineTimeoutMs: this.defaults.engineTimeoutMs,
      timeoutMs: options.timeoutMs ?? this.defaults.timeoutMs,
      maxOutputBytes: options.maxOutputBytes ?? this.defaults.maxOutputBytes,
    });
    if (raw.folderRefusal) throw folderRefusalError(raw.folderRefusal, { cwd, given: options.cwd, sandbox: `sandbox ${this.id}` });
    return toExecResult(raw);
  }

  /** Who a written file belongs to: the user commands run as (the `user` option, else the image's), so they can change what a tool wrote. */
  fileOwner(): Promise<{ uid: number; gid: number }> {
    this.owner ??= execInContainer(this.container, { argv: ["/bin/sh", "-c", "id -u; id -g"], cwd: "/", env: {}, user: this.defaults.user, engineTimeoutMs: this.defaults.engineTimeoutMs, timeoutMs: FILE_OP_TIMEOUT_MS, maxOutputBytes: 1024 })
      .then((result) => {
        const [uid, gid] = result.stdout.toString("utf8").trim().split("\n").map(Number);
        if (result.exitCode !== 0 || !Number.isInteger(uid) || !Number.isInteger(gid)) {
          throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `could not find the ids of user ${this.defaults.user ?? "(the image's)"} in sandbox ${this.id}: ${result.stderr.toString("utf8").trim() || `exit ${result.exitCode}`}`, {
            fix: "Check that the image has `id` (busybox or coreutils) and knows the user.",
          });
        }
        return { uid: uid!, gid: gid! };
      })
      .catch((error: unknown) => {
        this.owner = undefined;
        throw error;
      });
    return this.owner;
  }

  private script(name: keyof typeof SCRIPTS, logical: string, maxOutputBytes = 16 * 1024 * 1024): Promise<RawExecResult> {
    return execInContainer(this.container, {
      argv: ["/bin/sh", "-c", SCRIPTS[name], "sh", logical],
      cwd: "/",
      env: {},
      user: this.defaults.user,
      engineTimeoutMs: this.defaults.engineTimeoutMs,
      timeoutMs: FILE_OP_TIMEOUT_MS,
      maxOutputBytes,
    });
  }

  private check(result: RawExecResult, operation: string, logical: string, given: string): void {
    // Output past the cap is dropped: a file or listing cut short must never pass for the whole.
    if (result.truncated && result.exitCode === 0 && !result.timedOut) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `could not ${operation} ${logical} in sandbox ${this.id}: ${operation === "read" ? `the file is larger than ${MAX_READ_BYTES} bytes, the most readFile returns` : "its output passed the file helper's cap"}`, {
        fix: operation === "read" ? `Read it in parts with a command (e.g. exec("split -b 64m ${logical} part-")), or compress it first.` : "List a smaller folder.",
        details: { path: logical },
      });
    }
    if (result.exitCode === 0 && !result.timedOut) return;
    if (result.exitCode === 2) {
      throw new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `nothing at ${logical} in sandbox ${this.id}`, {
        fix: "List the folder first (listFiles) and use a path it returns.",
        details: { path: logical },
      });
    }
    // The read script's kind check is `[ -f ]`: a FIFO, a socket or a device fails it as a folder does.
    if (result.exitCode === 3) throw this.kindError(operation, logical, operation === "read" ? "is not a regular file (a folder, a FIFO, a socket or a device)" : "is a folder");
    if (result.exitCode === 4) throw pathEscape(given, `resolves through a symlink to a location outside ${WORKSPACE}`);
    throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `could not ${operation} ${logical} in sandbox ${this.id}: ${result.stderr.toString("utf8").trim() || `exit ${result.exitCode}`}`, {
      fix: "Check that the container is running (docker ps) and that its image has a POSIX shell with readlink, find and stat.",
      details: { path: logical, exitCode: result.exitCode },
    });
  }

  private kindError(operation: string, logical: string, why: string): AssemblyLineError {
    return new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `cannot ${operation} ${logical} in sandbox ${this.id}: it ${why}`, {
      fix: "Name a regular file under /workspace (listFiles shows the folder's files).",
      details: { path: logical },
    });
  }
}
