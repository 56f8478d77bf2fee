import type Docker from "dockerode";
import {
  AssemblyLineError,
  FILE_SCRIPTS,
  FILE_SCRIPT_EXIT,
  MAX_READ_BYTES,
  WORKSPACE,
  checkExecOptions,
  checkWriteContent,
  fileKindError,
  fileScriptRefusal,
  folderRefusalError,
  isAssemblyLineError,
  listedEntries,
  workspacePath,
  type ExecResult,
  type FileCall,
  type FileScript,
  type Sandbox,
  type SandboxExecOptions,
  type WorkspaceEntry,
} from "@assemblyline-agents/core";
import { engineCall } from "../engine.js";
import { type ContainerKeeper, containerLost, containerStopped, handleReleased } from "./container-keeper.js";
import { PID_DIR, execInContainer, neverStarted, toExecResult, type ContainerExec, type RawExecResult } from "./exec.js";
import { packFolders } from "./folder-tar.js";

export interface ExecDefaults {
  timeoutMs: number;
  maxOutputBytes: number;
  env: Record<string, string>;
  user: string | undefined;
  engineTimeoutMs: number;
}

/** Exit code of a command killed by SIGKILL: what every process gets when its container is killed, stopped or removed. */
const KILLED_EXIT_CODE = 128 + 9;
/** How long a container whose command got SIGKILL is watched for its stop: the command's stream ends tens of ms before the engine records it. */
const SETTLE_MS = 1_000;

/** How long a file operation's helper command may take. */
const FILE_OP_TIMEOUT_MS = 60_000;

/**
 * The longest command passed as sh's argument: the kernel refuses one argument
 * over 128 KiB (MAX_ARG_STRLEN) and the engine reports that as the command's
 * own exit 1. Longer ones (a large heredoc) go on stdin.
 */
const MAX_COMMAND_ARGUMENT_BYTES = 100 * 1024;
/*
 * Reads the whole command from stdin, then runs it with stdin at /dev/null, as
 * a command passed as an argument has it: under `sh -s` a command reading its
 * stdin would read the rest of the script.
 */
const COMMAND_FROM_STDIN = 'al_command=$(cat) || exit 1; exec </dev/null; eval "unset al_command; $al_command"';

/** argv (and stdin) running `command` with /bin/sh, as `sh -c command` does. */
function shellCommand(command: string): Pick<ContainerExec, "argv" | "stdin"> {
  const bytes = Buffer.from(command, "utf8");
  if (bytes.length <= MAX_COMMAND_ARGUMENT_BYTES) return { argv: ["/bin/sh", "-c", command] };
  return { argv: ["/bin/sh", "-c", COMMAND_FROM_STDIN], stdin: bytes };
}

/**
 * One run's container: files and a shell at a physical /workspace. The
 * runtime holds one handle for a whole drive of a run, so a handle follows its
 * key's container when the engine stops or removes it outside this host (see
 * ContainerKeeper): a stopped one is started again, files kept; a removed one
 * is replaced by a new container after the call that found it gone fails.
 */
export class DockerSandbox implements Sandbox {
  private owner: Promise<{ uid: number; gid: number }> | undefined;
  #container: Docker.Container;
  /** What a call found of the container: the next call starts it again (stopped) or gets a new one (gone) first. */
  #found: "stopped" | "gone" | undefined;
  /** A restart or replacement in progress, shared by the calls that need it. */
  #renewing: Promise<boolean> | undefined;
  #released = false;

  constructor(
    readonly id: string,
    container: Docker.Container,
    private readonly defaults: ExecDefaults,
    private readonly keeper?: ContainerKeeper,
  ) {
    this.#container = container;
  }

  /** What exec keeps of each output stream when a call gives no maxOutputBytes. */
  get maxOutputBytes(): number {
    return this.defaults.maxOutputBytes;
  }

  /** The container the handle's calls go to now. */
  get container(): Docker.Container {
    return this.#container;
  }

  /** The run was released: the handle's calls fail from now on instead of making a container nothing would release. */
  close(): Promise<unknown> {
    this.#released = true;
    return this.#renewing?.catch(() => undefined) ?? Promise.resolve();
  }

  /** At the key's next acquire: a container stopped or removed since is started again or replaced, so the drive starts with a running one. */
  async verify(): Promise<void> {
    if (!this.keeper || this.#released) return;
    if (this.#renewing) await this.#renewing.catch(() => undefined);
    const fate = this.#found ?? (await this.keeper.fate(this.#container));
    if (fate !== "running") await this.renew(fate);
  }

  async readFile(path: string): Promise<Uint8Array> {
    return this.call(() => this.readFileHere(path), () => true);
  }

  async writeFile(path: string, content: Uint8Array | string): Promise<void> {
    return this.call(() => this.writeFileHere(path, content), () => true);
  }

  /** Removes a file or a folder with its contents; a missing path is not an error; `/workspace` itself is emptied. */
  async deleteFile(path: string): Promise<void> {
    return this.call(() => this.deleteFileHere(path), () => true);
  }

  /**
   * Everything under `path`, recursively, sorted, under the path asked for (a
   * file lists itself; a missing path lists nothing), as the local sandbox
   * lists: a symlink is listed as what it points at but not descended into; one
   * pointing outside the workspace, or nowhere, is left out, as is a name
   * holding a newline.
   */
  async listFiles(path: string): Promise<WorkspaceEntry[]> {
    return this.call(() => this.listFilesHere(path), () => true);
  }

  /** `/bin/sh -c command` in the container at `cwd` (default /workspace), a command over 100 KiB read from stdin instead; a timeout kills its process tree (exit 124). */
  async exec(command: string, options: SandboxExecOptions = {}): Promise<ExecResult> {
    // A command the engine refused to start is made again in the restarted container; one that may have run never is.
    return this.call(() => this.execHere(command, options), neverStarted, (result) => (result.exitCode === KILLED_EXIT_CODE ? SETTLE_MS : result.timedOut || result.exitCode > 128 || result.exitCode < 0 ? 0 : undefined));
  }

  /**
   * `operation` on the container, which a call that finds it stopped starts
   * again (and makes once more when `again` says the failure left nothing
   * half done), and a call that finds it gone fails saying the files went with
   * it. `cutShort` flags a result that may come from the container dying
   * under the call (a command killed by a signal, or timed out), with how long
   * to watch a container still running for its stop.
   */
  private async call<T>(operation: () => Promise<T>, again: (error: unknown) => boolean, cutShort?: (value: T) => number | undefined): Promise<T> {
    if (this.#released) throw handleReleased(this.id);
    if (!this.keeper) return operation();
    if (this.#renewing) await this.#renewing.catch(() => undefined);
    const found = this.#found;
    // A loss a call already reported is not reported again; a stopped container that could not start again is one to report.
    if (found && !(await this.renew(found)) && found === "stopped") throw containerLost(this.id, this.keeper.afterLoss);
    const used = this.#container;
    let fate: "running" | "stopped" | "gone";
    let failure: unknown;
    try {
      const value = await operation();
      const settleMs = cutShort?.(value);
      if (settleMs === undefined || (fate = await this.fateOf(used, settleMs)) === "running") return value;
      failure = undefined;
    } catch (error) {
      // Refusals of the path or the input are the call's own; only an engine or container failure may be the container's.
      if (!isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE") && !isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE")) throw error;
      fate = await this.fateOf(used);
      if (fate === "running") throw error;
      failure = error;
      if (fate === "stopped" && again(error) && used === this.#container) {
        if (!(await this.renew("stopped"))) throw containerLost(this.id, this.keeper.afterLoss, error);
        return operation();
      }
    }
    if (used === this.#container) this.#found = fate;
    throw fate === "gone" ? containerLost(this.id, this.keeper.afterLoss, failure) : containerStopped(this.id, failure);
  }

  /** What became of `container`; an engine that cannot say leaves the call's own outcome standing. */
  private async fateOf(container: Docker.Container, settleMs = 0): Promise<"running" | "stopped" | "gone"> {
    return this.keeper!.fate(container, settleMs).catch(() => "running" as const);
  }

  /** The key's container running again: true when the files were kept (restarted), false when they are gone (a new container). */
  private renew(fate: "stopped" | "gone"): Promise<boolean> {
    if (this.#renewing) return this.#renewing;
    const renewing = (async () => {
      if (this.#released) throw handleReleased(this.id);
      const renewed = await this.keeper!.renew(this.#container, fate);
      this.#container = renewed.container;
      this.owner = undefined;
      this.#found = undefined;
      return renewed.kept;
    })();
    this.#renewing = renewing;
    const settled = () => {
      if (this.#renewing === renewing) this.#renewing = undefined;
    };
    renewing.then(settled, settled);
    return renewing;
  }

  private async readFileHere(path: string): Promise<Uint8Array> {
    const logical = workspacePath(path);
    const result = await this.script("read", logical, { maxOutputBytes: MAX_READ_BYTES });
    this.check(result, "read", logical, path);
    return new Uint8Array(result.stdout);
  }

  /**
   * The bytes go to the write script's stdin, which checks the path and writes
   * them as the user commands run as, in one exec: an engine write (putArchive)
   * runs as root and follows a symlink a command swaps in after any check.
   */
  private async writeFileHere(path: string, content: Uint8Array | string): Promise<void> {
    const logical = workspacePath(path);
    // Before the script runs: it makes the file's folders.
    checkWriteContent(content, logical);
    if (logical === WORKSPACE) throw fileKindError({ operation: "write", logical, given: path, sandboxId: this.id }, "is the workspace folder itself");
    const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
    this.check(await this.script("write", logical, { stdin: bytes }), "write", logical, path);
  }

  private async deleteFileHere(path: string): Promise<void> {
    const logical = workspacePath(path);
    this.check(await this.script("delete", logical), "delete", logical, path);
  }

  private async listFilesHere(path: string): Promise<WorkspaceEntry[]> {
    const logical = workspacePath(path);
    const result = await this.script("list", logical);
    this.check(result, "list", logical, path);
    return listedEntries(result.stdout.toString("utf8"), logical);
  }

  private async execHere(command: string, options: SandboxExecOptions): Promise<ExecResult> {
    if (typeof command !== "string") throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", "exec(command): command is not a string", { fix: "Pass a shell command line." });
    // The engine would start no process and report exit 1, as if the command had run and failed.
    if (command.includes("\0")) throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", "exec(command): command holds a NUL byte, which no process argument can carry", { fix: "Remove the NUL byte from the command; write binary data to a file and have the command read it." });
    checkExecOptions(options);
    const cwd = workspacePath(options.cwd ?? WORKSPACE);
    const request: ContainerExec = {
      ...shellCommand(command),
      cwd,
      env: { ...this.defaults.env, WORKSPACE, ...options.env },
      user: this.defaults.user,
      engineTimeoutMs: this.defaults.engineTimeoutMs,
      timeoutMs: options.timeoutMs ?? this.defaults.timeoutMs,
      maxOutputBytes: options.maxOutputBytes ?? this.defaults.maxOutputBytes,
    };
    let raw = await execInContainer(this.container, request);
    // The command never started: it runs once the workspace is back.
    if (raw.workspaceMissing) {
      await this.makeWorkspace();
      raw = await execInContainer(this.container, request);
    }
    if (raw.folderRefusal) throw folderRefusalError(raw.folderRefusal, { cwd, given: options.cwd, sandbox: `sandbox ${this.id}` });
    return toExecResult(raw);
  }

  /**
   * /workspace (and the pid files' folder), made or handed over by the engine
   * to the user commands run as: at creation, the engine made it as root, and
   * a command that removed it leaves a user who may not be able to make it
   * again (`/` is root's). Extracted as root, but only at `/`, which no command
   * of a non-root user can change, and an entry over a symlink replaces it.
   */
  async makeWorkspace(): Promise<void> {
    const owner = await this.fileOwner();
    const archive = await packFolders([WORKSPACE.slice(1), PID_DIR.slice(1)], owner);
    await engineCall(`making ${WORKSPACE} of sandbox ${this.id} for uid ${owner.uid}`, () => this.container.putArchive(archive, { path: "/" }));
  }

  /** Who commands run as (the `user` option, else the image's): the owner /workspace is given to. */
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

  /** A file script, run again once /workspace is made again when a command removed it. */
  private async script(name: FileScript, logical: string, { maxOutputBytes = 16 * 1024 * 1024, stdin }: { maxOutputBytes?: number; stdin?: Buffer } = {}): Promise<RawExecResult> {
    const request: ContainerExec = {
      argv: ["/bin/sh", "-c", FILE_SCRIPTS[name], "sh", logical, ...(stdin ? [String(stdin.length)] : [])],
      cwd: "/",
      env: {},
      user: this.defaults.user,
      engineTimeoutMs: this.defaults.engineTimeoutMs,
      timeoutMs: FILE_OP_TIMEOUT_MS,
      maxOutputBytes,
      ...(stdin ? { stdin } : {}),
    };
    const result = await execInContainer(this.container, request);
    if (result.exitCode !== FILE_SCRIPT_EXIT.workspaceMissing || result.timedOut) return result;
    await this.makeWorkspace();
    return execInContainer(this.container, request);
  }

  private check(result: RawExecResult, operation: FileCall["operation"], logical: string, given: string): void {
    // Output past the cap is dropped: a file or listing cut short must never pass for the whole.
    if (result.truncated && result.exitCode === 0 && !result.timedOut) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `could not ${operation} ${logical} in sandbox ${this.id}: ${operation === "read" ? `the file is larger than ${MAX_READ_BYTES} bytes, the most readFile returns` : "its output passed the file helper's cap"}`, {
        fix: operation === "read" ? `Read it in parts with a command (e.g. exec("split -b 64m ${logical} part-")), or compress it first.` : "List a smaller folder.",
        details: { path: logical },
      });
    }
    if (result.exitCode === 0 && !result.timedOut) return;
    const refusal = result.timedOut ? undefined : fileScriptRefusal(result.exitCode, { operation, logical, given, sandboxId: this.id });
    if (refusal) throw refusal;
    throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `could not ${operation} ${logical} in sandbox ${this.id}: ${result.stderr.toString("utf8").trim() || `exit ${result.exitCode}`}`, {
      fix: `Check that the container is running (docker ps) and that its image has a POSIX shell with readlink, find and stat${operation === "write" ? "; a write runs as the user commands run as, with the rights a command writing the file would have (a command can chmod or chown what it may not write)" : ""}.`,
      details: { path: logical, exitCode: result.exitCode },
    });
  }
}
