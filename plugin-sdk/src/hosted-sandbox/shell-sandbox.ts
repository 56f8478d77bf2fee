import { randomBytes } from "node:crypto";
import { AssemblyLineError } from "../errors.js";
import type { ExecResult, Sandbox, SandboxExecOptions } from "../sandbox.js";
import { checkExecOptions } from "../exec-options.js";
import { checkWriteContent } from "../write-content.js";
import { MAX_TIMER_MS } from "../timeout.js";
import { parseWrapped, wrapScript, type ScriptRequest, type ScriptResult } from "./exec-script.js";
import { folderRefusalError } from "./folder-refusal.js";
import { FILE_SCRIPTS, FILE_SCRIPT_EXIT, type FileScript } from "../sandbox-scripts/file-scripts.js";
import { checkedRealPath, fileKindError, fileScriptRefusal, listedEntries, preparedWrite, workspaceMissingError, type FileCall, type WorkspaceEntry } from "../sandbox-scripts/file-script-output.js";
import { WORKSPACE, workspacePath } from "../sandbox-scripts/workspace-path.js";
import { PROVIDER_SCRIPTS } from "./provider-scripts.js";

/**
 * What a hosted sandbox provider must offer for ShellSandbox: run one shell
 * script, and move whole files by real path. A provider adapter implements
 * these three calls with its SDK; ShellSandbox keeps the Sandbox contract
 * (physical /workspace, no escape, timeouts that kill the tree, output caps).
 */
export interface SandboxDriver {
  /** Runs `script` with `sh` in the sandbox and returns everything it printed (stdout, with stderr mixed in or not). */
  runScript(script: string, limitMs: number): Promise<string>;
  downloadFile(realPath: string): Promise<Uint8Array>;
  uploadFile(realPath: string, content: Uint8Array): Promise<void>;
  /**
   * The longest script, in UTF-8 bytes, runScript can hand the provider (what the driver adds
   * itself, and its encoding, allowed for); default 64 KiB. A command whose wrapper script would
   * be longer is uploaded as a file and read from there.
   */
  readonly maxScriptBytes?: number;
}

export interface ShellSandboxDefaults {
  timeoutMs: number;
  maxOutputBytes: number;
  env: Record<string, string>;
}

/** Largest listing listFiles returns: the provider hands the script's output back whole, in memory. */
const MAX_LISTING_BYTES = 16 * 1024 * 1024;
/** How long a file operation's helper script may take. */
const FILE_OP_TIMEOUT_MS = 60_000;
/** Extra time the provider grants a script beyond its own watchdog, so the watchdog always fires first. */
const PROVIDER_GRACE_MS = 30_000;
/**
 * The longest a script's watchdog waits: the provider's wait for it (this, the grace, and what a
 * provider's SDK adds: Daytona 5 s, Modal up to a second of rounding) stays within Node's timer
 * limit, past which a timer fires at once and every command would fail. Longer timeouts, which
 * exec accepts up to that limit (24.8 days), wait this long: 90 s less.
 */
const MAX_SCRIPT_TIMEOUT_MS = MAX_TIMER_MS - PROVIDER_GRACE_MS - 60_000;
/**
 * The longest wrapper script of a driver that declares no maxScriptBytes. The providers pass the
 * script as one process argument, which the kernel refuses past 128 KiB (MAX_ARG_STRLEN), and
 * their SDKs may refuse less (Modal: 64 KiB of arguments in all).
 */
const DEFAULT_MAX_SCRIPT_BYTES = 64 * 1024;

/** One run's hosted sandbox: files and a shell at a physical /workspace, through a provider's SandboxDriver. */
export class ShellSandbox implements Sandbox {
  constructor(
    readonly id: string,
    private readonly driver: SandboxDriver,
    private readonly defaults: ShellSandboxDefaults,
    /** Names the provider in errors, e.g. "Daytona". */
    private readonly provider: string,
  ) {}

  get maxOutputBytes(): number {
    return this.defaults.maxOutputBytes;
  }

  async readFile(path: string): Promise<Uint8Array> {
    const logical = workspacePath(path);
    const result = await this.script("locate", logical);
    this.check(result, "read", logical, path);
    return this.driver.downloadFile(checkedRealPath(result.stdout, path));
  }

  async writeFile(path: string, content: Uint8Array | string): Promise<void> {
    const logical = workspacePath(path);
    // Before prepareWrite, which makes the file's folders: content the upload cannot take must change nothing.
    checkWriteContent(content, logical);
    if (logical === WORKSPACE) throw fileKindError({ operation: "write", logical, given: path, sandboxId: this.id }, "is the workspace folder itself");
    const prepared = await this.script("prepareWrite", logical);
    this.check(prepared, "write", logical, path);
    const { target, existing } = preparedWrite(prepared.stdout, path);
    const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
    // Uploads create files 0644: an existing file keeps its mode, as a write into it does.
    const keptMode = existing && existing.mode !== 0o644 ? existing.mode.toString(8) : undefined;
    const folder = target.slice(0, target.lastIndexOf("/"));
    const name = target.slice(folder.length + 1);
    /*
     * An upload writes into the file already there, so through a hard link it would change the
     * file's other names (maybe outside /workspace); and Daytona's upload trims whitespace off the
     * path's ends, so "notes " would overwrite "notes". Either way the bytes go to a fresh name in
     * the same folder, which is then renamed over the target, as the Docker and local sandboxes do.
     */
    if ((existing?.links ?? 1) > 1 || /^\s|\s$/.test(name)) {
      const staged = `${folder}/.al-write-${randomBytes(12).toString("hex")}`;
      const fileOp = (script: string, args: string[]) => this.run({ script, args, cwd: "/", env: {}, timeoutMs: FILE_OP_TIMEOUT_MS, maxOutputBytes: 4096 });
      await this.driver.uploadFile(staged, bytes).catch(async (error: unknown) => {
        await fileOp('rm -f -- "$1"', [staged]).catch(() => undefined);
        throw error;
      });
      this.check(await fileOp(PROVIDER_SCRIPTS.replaceFile, [staged, target, keptMode ?? ""]), "write", logical, path);
      return;
    }
    await this.driver.uploadFile(target, bytes);
    if (keptMode) this.check(await this.run({ script: PROVIDER_SCRIPTS.restoreMode, args: [target, keptMode], cwd: "/", env: {}, timeoutMs: FILE_OP_TIMEOUT_MS, maxOutputBytes: 4096 }), "write", logical, path);
  }

  /** Removes a file or a folder with its contents; a missing path is not an error; `/workspace` itself is emptied. */
  async deleteFile(path: string): Promise<void> {
    const logical = workspacePath(path);
    this.check(await this.script("delete", logical), "delete", logical, path);
  }

  /**
   * Everything under `path`, recursively, sorted, under the path asked for (a
   * file lists itself; a missing path lists nothing), as the Docker and local
   * sandboxes list: a symlink is listed as what it points at but not descended
   * into; one pointing outside the workspace, or nowhere, is left out, as is a
   * name holding a newline. A listing over 16 MiB is refused, never returned cut short.
   */
  async listFiles(path: string): Promise<WorkspaceEntry[]> {
    const logical = workspacePath(path);
    const result = await this.script("list", logical, MAX_LISTING_BYTES);
    this.check(result, "list", logical, path);
    // Cut at the cap, the listing would silently miss entries (and end in half a line).
    if (result.truncated) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `could not list ${logical} in ${this.provider} sandbox ${this.id}: the listing of ${logical} is more than the 16 MiB listFiles returns`, {
        fix: `List a subfolder of ${logical} instead, or search it with exec (find ${logical} -maxdepth 2 | head -n 1000).`,
        details: { path: logical, limit: MAX_LISTING_BYTES },
      });
    }
    return listedEntries(result.stdout, logical);
  }

  /**
   * `sh -c command` at `cwd` (default /workspace), a command whose wrapper script would be longer
   * than the provider takes (maxScriptBytes) uploaded and read from a file instead; a timeout
   * kills its process tree (exit 124). A /workspace a command removed is made again first.
   */
  async exec(command: string, options: SandboxExecOptions = {}): Promise<ExecResult> {
    if (typeof command !== "string") throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", "exec(command): command is not a string", { fix: "Pass a shell command line." });
    checkExecOptions(options);
    const cwd = workspacePath(options.cwd ?? WORKSPACE);
    const inline: ScriptRequest = {
      script: command,
      cwd,
      env: { ...this.defaults.env, WORKSPACE, ...options.env },
      timeoutMs: options.timeoutMs ?? this.defaults.timeoutMs,
      maxOutputBytes: options.maxOutputBytes ?? this.defaults.maxOutputBytes,
    };
    // Measured as the provider gets it: quoted (each ' takes 4 bytes), with the env's exports and the wrapper around it.
    const fits = Buffer.byteLength(wrapScript(bounded(inline)).script) <= (this.driver.maxScriptBytes ?? DEFAULT_MAX_SCRIPT_BYTES);
    const commandFile = fits ? undefined : await this.uploadedCommand(command);
    const request: ScriptRequest = commandFile ? { ...inline, script: PROVIDER_SCRIPTS.runCommandFile, args: [commandFile] } : inline;
    let result = await this.run(request);
    // The command never started: it runs once the workspace is back.
    if (result.workspaceMissing && (await this.madeWorkspaceAgain())) result = await this.run(request);
    if (result.folderRefusal) {
      // The command that would have removed its file never ran.
      if (commandFile) await this.run({ script: 'rm -f -- "$1"', args: [commandFile], cwd: "/", env: {}, timeoutMs: FILE_OP_TIMEOUT_MS, maxOutputBytes: 4096 }).catch(() => undefined);
      if (result.workspaceMissing) throw workspaceMissingError(`run a command in ${cwd} in ${this.provider} sandbox ${this.id}`, cwd);
      throw folderRefusalError(result.folderRefusal, { cwd, given: options.cwd, sandbox: `${this.provider} sandbox ${this.id}` });
    }
    const { folderRefusal: _, workspaceMissing: __, ...ran } = result;
    return ran;
  }

  /** Where a command too long for the wrapper script was uploaded. */
  private async uploadedCommand(command: string): Promise<string> {
    const bytes = new TextEncoder().encode(command);
    // A name no command can guess, so none can put a symlink there first.
    const file = `/tmp/al-command-${randomBytes(12).toString("hex")}.sh`;
    await this.driver.uploadFile(file, bytes);
    return file;
  }

  /** Whether /workspace, which a command removed, could be made again (prepare). */
  private async madeWorkspaceAgain(): Promise<boolean> {
    return this.prepare().then(
      () => true,
      () => false,
    );
  }

  /** Make /workspace: when the provider has just created the sandbox, and again when a command removed it. */
  async prepare(): Promise<void> {
    const result = await this.run({ script: PROVIDER_SCRIPTS.prepareWorkspace, cwd: "/", env: {}, timeoutMs: FILE_OP_TIMEOUT_MS, maxOutputBytes: 4096 });
    if (result.exitCode !== 0) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `could not create ${WORKSPACE} in ${this.provider} sandbox ${this.id} (exit ${result.exitCode})`, {
        fix: `Use an image whose user can create ${WORKSPACE} (root, or passwordless sudo), or one that already has a writable ${WORKSPACE}.`,
      });
    }
  }

  private async run(given: ScriptRequest): Promise<ScriptResult> {
    const request = bounded(given);
    const { script, boundary } = wrapScript(request);
    const output = await this.driver.runScript(script, request.timeoutMs + PROVIDER_GRACE_MS);
    const result = parseWrapped(output, boundary, request.maxOutputBytes);
    if (!result) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `${this.provider} sandbox ${this.id} did not run the command wrapper: ${output.trim().slice(0, 500) || "(no output)"}`, {
        fix: `The sandbox image needs a POSIX shell with mktemp, head, wc, readlink, find and stat (busybox or coreutils), and ${WORKSPACE} must exist.`,
      });
    }
    return result;
  }

  /** A file script, run again once /workspace is made again when a command removed it. */
  private async script(name: FileScript, logical: string, maxOutputBytes = 64 * 1024): Promise<ScriptResult> {
    const request = { script: FILE_SCRIPTS[name], args: [logical], cwd: "/", env: {}, timeoutMs: FILE_OP_TIMEOUT_MS, maxOutputBytes };
    const result = await this.run(request);
    if (result.exitCode !== FILE_SCRIPT_EXIT.workspaceMissing || result.timedOut || !(await this.madeWorkspaceAgain())) return result;
    return this.run(request);
  }

  private check(result: ScriptResult, operation: FileCall["operation"], logical: string, given: string): void {
    if (result.exitCode === 0 && !result.timedOut) return;
    const refusal = result.timedOut ? undefined : fileScriptRefusal(result.exitCode, { operation, logical, given, sandboxId: this.id });
    if (refusal) throw refusal;
    throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `could not ${operation} ${logical} in ${this.provider} sandbox ${this.id}: ${result.stderr.trim() || `exit ${result.exitCode}`}`, {
      fix: "Check that the sandbox is running and that its image has a POSIX shell with readlink, find and stat.",
      details: { path: logical, exitCode: result.exitCode },
    });
  }
}

/** A request with the timeout and output cap the wrapper can take. */
function bounded(request: ScriptRequest): ScriptRequest {
  // A cap past MAX_SAFE_INTEGER would be printed as 1e+21, which `head -c` refuses, and the output would come back empty: no cap is what it means.
  return { ...request, timeoutMs: Math.min(request.timeoutMs, MAX_SCRIPT_TIMEOUT_MS), maxOutputBytes: Math.min(request.maxOutputBytes, Number.MAX_SAFE_INTEGER) };
}
