import { AssemblyLineError, MAX_TIMER_MS, isTimerDelay, type SandboxAdapter, type SandboxSessionStore } from "@assemblyline-agents/core";
import { createHash } from "node:crypto";
import { mkdir, readdir, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describeOptions, unknownOptions } from "../known-options.js";
import { CommandRecords } from "./command-records.js";
import { LocalSandbox, badOption, type ExecDefaults } from "./local-sandbox.js";
import { killMarkedProcesses, sandboxMarker } from "./marked-processes.js";

const SANDBOX_OPTIONS: readonly (keyof LocalSandboxAdapterOptions)[] = ["root", "agentDir", "defaultTimeoutMs", "maxOutputBytes", "env", "sessions"];

/*
 * Layout: <root>/<key>/workspace is `/workspace`; <key>/home and <key>/tmp are the
 * commands' HOME and TMPDIR, kept beside it so caches do not land in the
 * workspace; <key>/commands records the process group of each running
 * command (command-records.ts). The folder is a pure function of the key, so a run resumed by
 * another process (or after a restart) reopens the same files. The key is
 * percent-encoded down to [A-Za-z0-9._-], so it is always one folder name.
 */

const ADAPTER_NAME = "local";
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** Most filesystems cap a name at 255 bytes. */
const MAX_FOLDER_NAME = 200;

export interface LocalSandboxAdapterOptions {
  /** The folder holding one sub-folder per sandbox. Default: `<agentDir>/.assembly-line/sandboxes`, or `<os.tmpdir()>/assembly-line-sandboxes` without `agentDir`. */
  root?: string;
  /** The agent folder the default `root` is under. */
  agentDir?: string;
  /** exec timeout when a call gives none. Default 60 000 ms. */
  defaultTimeoutMs?: number;
  /** Cap for stdout and for stderr, each, when a call gives none. Default 1 MiB. */
  maxOutputBytes?: number;
  /**
   * The environment every command starts from. Default: only the host's PATH and
   * LANG, so API keys in the host's environment do not reach model-run commands.
   * HOME, TMPDIR, WORKSPACE and PWD are always set by the sandbox.
   */
  env?: Record<string, string>;
  /** Record each sandbox (key -> folder) for inspection; optional. */
  sessions?: SandboxSessionStore;
}

/**
 * The `adapter: "local"` sandbox: a trusted temporary-directory emulation of
 * `/workspace` on the host. Commands see the real host folder (also as
 * $WORKSPACE), not a literal /workspace, and are not isolated from the host; use
 * the Docker sandbox for exact /workspace parity and isolation.
 */
export class LocalSandboxAdapter implements SandboxAdapter {
  readonly name = ADAPTER_NAME;
  readonly root: string;
  private readonly defaults: ExecDefaults;
  private readonly sessions: SandboxSessionStore | undefined;
  private readonly live = new Map<string, Promise<LocalSandbox>>();

  constructor(options: LocalSandboxAdapterOptions = {}) {
    const unknown = unknownOptions(options, SANDBOX_OPTIONS);
    if (unknown.length > 0) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `LocalSandboxAdapter ${describeOptions(unknown)} unknown`, { fix: `The options are ${SANDBOX_OPTIONS.join(", ")}; check the spelling.`, details: { options: unknown } });
    }
    this.root = resolve(options.root ?? (options.agentDir ? join(options.agentDir, ".assembly-line", "sandboxes") : join(tmpdir(), "assembly-line-sandboxes")));
    const timeoutMs = options.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!isTimerDelay(timeoutMs)) throw badOption("defaultTimeoutMs", timeoutMs, `a positive number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`);
    const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    if (typeof maxOutputBytes !== "number" || !Number.isInteger(maxOutputBytes) || maxOutputBytes < 0) {
      throw badOption("maxOutputBytes", maxOutputBytes, "a non-negative whole number of bytes");
    }
    const hostEnv: Record<string, string> = { PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin", LANG: process.env.LANG ?? "C.UTF-8" };
    this.defaults = { timeoutMs, maxOutputBytes, env: { ...hostEnv, ...options.env } };
    this.sessions = options.sessions;
  }

  /** The sandbox for `key`, creating its folder or reopening the one already there. */
  acquire(key: string): Promise<LocalSandbox> {
    let pending = this.live.get(key);
    if (pending === undefined) {
      pending = this.open(key);
      this.live.set(key, pending);
      pending.catch(() => this.live.delete(key));
    }
    return pending;
  }

  /** Stop the sandbox's running commands and delete its folder. Releasing an unknown key is a no-op. */
  async release(key: string): Promise<void> {
    const folder = this.folderFor(key);
    const pending = this.live.get(key);
    this.live.delete(key);
    // Waits for the calls on their way, so none recreates a folder removed below.
    await (await pending?.catch(() => undefined))?.close();
    await stopLeftovers(folder);
    await rm(folder, { recursive: true, force: true });
    await this.sessions?.deleteSandboxSession(key);
  }

  /** The keys whose folders are under the root (a key too long for a folder name of its own is not listed). */
  async listKeys(): Promise<string[]> {
    const names = await readdir(this.root).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return [] as string[];
      throw error;
    });
    return names.map(keyOfFolder).filter((key): key is string => key !== undefined).sort();
  }

  /** The host folder a key's sandbox lives in (its workspace is `<folder>/workspace`). */
  folderFor(key: string): string {
    return join(this.root, folderName(key));
  }

  private async open(key: string): Promise<LocalSandbox> {
    const folder = this.folderFor(key);
    const workspace = join(folder, "workspace");
    // 0o700: on a shared tmpdir other users must not read a run's files.
    await mkdir(workspace, { recursive: true, mode: 0o700 });
    // Opened by this adapter for the first time: a command still running was left by the run's earlier owner, whose timeout died with it.
    await stopLeftovers(folder);
    const commands = join(folder, "commands");
    const marker = sandboxMarker(folder);
    const id = `${ADAPTER_NAME}:${key}`;
    const sandbox = new LocalSandbox(id, { workspace: await realpath(workspace), home: join(folder, "home"), tmp: join(folder, "tmp"), commands }, this.defaults, marker);
    if (this.sessions) {
      const now = new Date().toISOString();
      const existing = await this.sessions.getSandboxSession(key);
      await this.sessions.putSandboxSession({
        key,
        adapter: ADAPTER_NAME,
        sessionId: id,
        data: { workspace: sandbox.folders.workspace },
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
      });
    }
    return sandbox;
  }
}

/** One folder name per key; keys too long for a name keep a prefix and a hash. */
function folderName(key: string): string {
  if (typeof key !== "string" || key === "" || key === "." || key === "..") {
    throw new AssemblyLineError("AL_ERR_PATH_ESCAPE", `sandbox key ${JSON.stringify(key)} would name the sandboxes folder itself or its parent`, {
      fix: "Key sandboxes by a non-empty id such as the run id.",
      details: { key },
    });
  }
  let name = "";
  for (const byte of Buffer.from(key, "utf8")) {
    const char = String.fromCharCode(byte);
    name += /[A-Za-z0-9._-]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  // "~" never survives encoding, so a shortened name cannot equal another key's full one.
  if (name.length > MAX_FOLDER_NAME) name = `${name.slice(0, 120)}~${createHash("sha256").update(key).digest("hex").slice(0, 40)}`;
  return name;
}

/** The key a folder name encodes (folderName's inverse); undefined for a shortened name or one it never makes. */
function keyOfFolder(name: string): string | undefined {
  if (!/^(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+$/.test(name) || name === "." || name === "..") return undefined;
  const bytes = Buffer.from(name.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))), "latin1");
  const key = bytes.toString("utf8");
  return folderName(key) === name ? key : undefined;
}

/**
 * Kill what a crashed process left running in the sandbox at `folder`, which no
 * timer of this process would stop: the recorded commands' groups, then every
 * process that left its group but still carries the sandbox's mark.
 */
async function stopLeftovers(folder: string): Promise<void> {
  await new CommandRecords(join(folder, "commands")).killLeftovers();
  await killMarkedProcesses(sandboxMarker(folder), true);
}
