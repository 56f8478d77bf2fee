import { brand, hasBrand, type Branded } from "./brand.js";

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** true when output was cut at the cap. */
  truncated: boolean;
}

/** One isolated workspace: files and a shell rooted at `/workspace`. */
export interface Sandbox {
  readonly id: string;
  /**
   * The bytes of each of stdout and stderr `exec` keeps when a call gives no `maxOutputBytes`
   * (the adapter's own option): the `bash` tool keeps no more than this, nor than 64 KiB.
   * Optional: without it `bash` keeps 64 KiB.
   */
  readonly maxOutputBytes?: number;
  /** Paths are logical, under `/workspace`. */
  readFile(path: string): Promise<Uint8Array>;
  /** Creates missing folders; through a symlink inside the workspace it writes the link's target; an existing file keeps its mode. */
  writeFile(path: string, content: Uint8Array | string): Promise<void>;
  deleteFile(path: string): Promise<void>;
  listFiles(path: string): Promise<Array<{ path: string; type: "file" | "directory"; size: number }>>;
  /**
   * Run a shell command. Without `timeoutMs` the adapter's own default applies, which must be
   * finite (every first-party adapter: its `defaultTimeoutMs`, 60 s unless set); the `bash` tool
   * passes one only when the model asks for it. What the command starts in the background
   * ends with it (at its timeout, or when it exits): a command does not outlive its call.
   */
  exec(command: string, options?: SandboxExecOptions): Promise<ExecResult>;
}

/** How one `Sandbox.exec` runs (checked by `checkExecOptions`). */
/**
 * The environment variable every sandbox command is started with (its value marks
 * that one command), which its children inherit. A process that left the
 * command's process group (`setsid cmd &`) is still found by it in
 * /proc/<pid>/environ and killed with the command.
 */
export const SANDBOX_COMMAND_MARK_VARIABLE = "ASSEMBLY_LINE_SANDBOX_COMMAND";

export interface SandboxExecOptions {
  /** Where the command starts: an existing folder under /workspace (default /workspace); else `AL_ERR_PATH_NOT_FOUND`, or `AL_ERR_PATH_ESCAPE` through a symlink out of it. */
  cwd?: string;
  /** Milliseconds before the command's process tree is killed (exit 124); default the sandbox's. */
  timeoutMs?: number;
  /** Bytes of stdout and of stderr kept, a whole number, 0 for none; past it the output is cut (`truncated`). */
  maxOutputBytes?: number;
  /** Variables the command sees, over the sandbox's own. */
  env?: Record<string, string>;
}

/** Creates sandboxes, one per run, lazily. */
export interface SandboxAdapter {
  readonly name: string;
  acquire(key: string): Promise<Sandbox>;
  release(key: string): Promise<void>;
  /**
   * The keys this adapter holds something for (a sandbox, or snapshots a release
   * would remove), so that a host can release those of finished runs: a process
   * that stops between a run's end and its release, or whose release fails,
   * leaves them behind (`runtime.releaseFinishedSandboxes()`). Optional: without
   * it such a sandbox stays until released by hand.
   */
  listKeys?(): Promise<string[]>;
}

/** When a sandbox adapter commits a workspace to a snapshot it can restore from. Opt-in. */
export interface SandboxSnapshotPolicy {
  /** manual: only when asked (`snapshot(key)`); auto: also at every release (a run's end). */
  mode: "manual" | "auto";
  /** Keep the newest N snapshots per key, pruning older ones after each snapshot. Default 3. */
  retainLast?: number;
  /** Recorded on each snapshot made without its own reason. */
  reason?: string;
}

/** A snapshot policy with its default filled in, as an adapter keeps it. */
export interface ResolvedSnapshotPolicy {
  mode: "manual" | "auto";
  retainLast: number;
  reason: string | undefined;
}

/** What is wrong with a snapshot policy: the option (`snapshot.mode`), its value and what it must be, for the adapter's own error. */
export interface SnapshotPolicyProblem {
  option: string;
  value: unknown;
  expected: string;
}

const SNAPSHOT_POLICY_KEYS = ["mode", "retainLast", "reason"];

/**
 * A sandbox adapter's `snapshot` option checked, with `retainLast` defaulting to 3, or its first
 * problem. A key it does not know is one (`retainlast` would leave the default in place unseen).
 */
export function checkSnapshotPolicy(value: unknown): { policy: ResolvedSnapshotPolicy } | { problem: SnapshotPolicyProblem } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { problem: { option: "snapshot", value, expected: '{ mode: "manual" or "auto", retainLast?, reason? }' } };
  const given = value as Record<string, unknown>;
  const unknown = Object.keys(given).find((key) => !SNAPSHOT_POLICY_KEYS.includes(key));
  if (unknown !== undefined) return { problem: { option: `snapshot.${unknown}`, value: given[unknown], expected: `a known option of snapshot (${SNAPSHOT_POLICY_KEYS.join(", ")})` } };
  const { mode, retainLast = 3, reason } = given;
  if (mode !== "manual" && mode !== "auto") return { problem: { option: "snapshot.mode", value: mode, expected: '"manual" or "auto"' } };
  if (!Number.isInteger(retainLast) || (retainLast as number) < 1) return { problem: { option: "snapshot.retainLast", value: retainLast, expected: "a whole number of at least 1" } };
  if (reason !== undefined && typeof reason !== "string") return { problem: { option: "snapshot.reason", value: reason, expected: "a string" } };
  return { policy: { mode, retainLast: retainLast as number, reason } };
}

/** One committed state of a key's sandbox. */
export interface SandboxSnapshot {
  id: string;
  key: string;
  /** ISO time. */
  createdAt: string;
  reason: string | undefined;
}

/**
 * A SandboxAdapter that keeps snapshots: `acquire` of a key with no live
 * sandbox restores from its latest snapshot.
 */
export interface SnapshottingSandboxAdapter extends SandboxAdapter {
  snapshot(key: string, options?: { reason?: string }): Promise<SandboxSnapshot>;
  /** Newest first. */
  listSnapshots(key: string): Promise<SandboxSnapshot[]>;
  /** Replace the key's sandbox with one made from `snapshotId` (default: the latest). */
  restore(key: string, snapshotId?: string): Promise<Sandbox>;
  /** Delete the key's snapshots beyond the newest `retainLast`; returns the ids deleted. */
  pruneSnapshots(key: string, retainLast?: number): Promise<string[]>;
}

export function isSnapshottingSandboxAdapter(value: unknown): value is SnapshottingSandboxAdapter {
  const candidate = value as Partial<SnapshottingSandboxAdapter> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.acquire === "function" &&
    typeof candidate.snapshot === "function" &&
    typeof candidate.listSnapshots === "function" &&
    typeof candidate.restore === "function" &&
    typeof candidate.pruneSnapshots === "function"
  );
}

export interface SandboxOptions {
  adapter: "local" | "docker" | "daytona" | "e2b" | "modal" | (string & {});
  image?: string;
  /** Omit or `/workspace`: shell commands see a real, physical `/workspace`. */
  workingDirectory?: "/workspace";
  network?: "none" | "bridge" | (string & {});
  snapshot?: SandboxSnapshotPolicy;
}

export type SandboxDefinition = SandboxOptions & Branded<"assembly-line.sandbox">;

export function defineSandbox(options: SandboxOptions): SandboxDefinition {
  return brand("assembly-line.sandbox", options);
}

export function isSandboxDefinition(value: unknown): value is SandboxDefinition {
  return hasBrand(value, "assembly-line.sandbox");
}
