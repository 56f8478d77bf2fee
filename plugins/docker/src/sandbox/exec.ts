import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import type Docker from "dockerode";
import { AssemblyLineError, FOLDER_REFUSALS, SANDBOX_COMMAND_MARK_VARIABLE, isAssemblyLineError, utf8Boundary, type ExecResult, type FolderRefusal } from "@assemblyline-agents/core";
import { engineCall, engineError, engineMessage, statusOf, withDeadline } from "../engine.js";

/** Exit code of a command stopped at its timeout (as coreutils `timeout` and the local sandbox report). */
export const TIMEOUT_EXIT_CODE = 124;

export interface ContainerExec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  user?: string;
  timeoutMs: number;
  maxOutputBytes: number;
  /** Raw bytes, not decoded (file reads). */
  binary?: boolean;
  /** Bytes the command reads on its stdin, which then ends (file writes). */
  stdin?: Buffer;
  /** Deadline of each engine call around the command, and of stopping it at its timeout (not of the command itself). */
  engineTimeoutMs: number;
}

export interface RawExecResult {
  /** Set when the command never started: its folder could not be entered. */
  folderRefusal?: FolderRefusal;
  /** With folderRefusal "missing": /workspace itself is gone (a command removed it). */
  workspaceMissing?: boolean;
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  timedOut: boolean;
  truncated: boolean;
}

/** Keeps the first `limit` bytes and drains the rest, so a loud process never blocks on a full pipe. */
class CappedSink extends Writable {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  /** The first `headLength` bytes whatever the limit (the wrapper's marker line). */
  private headBytes = Buffer.alloc(0);
  truncated = false;

  constructor(
    private readonly limit: number,
    private readonly headLength = 0,
  ) {
    super();
  }

  head(): Buffer {
    return this.headBytes;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    if (this.headBytes.length < this.headLength) this.headBytes = Buffer.concat([this.headBytes, chunk.subarray(0, this.headLength - this.headBytes.length)]);
    const room = this.limit - this.kept;
    if (chunk.length > room) this.truncated = true;
    if (room > 0) {
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.chunks.push(Buffer.from(part));
      this.kept += part.length;
    }
    done();
  }

  /** What was kept; cut at the cap, without a character the cap split (a file read cut short is refused whole, so only text meets the cap). */
  bytes(): Buffer {
    const bytes = Buffer.concat(this.chunks);
    return this.truncated ? bytes.subarray(0, utf8Boundary(bytes)) : bytes;
  }
}

/** What the wrapper reports, in place of a folder refusal, when /workspace itself is gone. */
const WORKSPACE_MISSING = "workspace-missing";

/** Where each running command's pid file is, inside the container. */
export const PID_DIR = "/tmp/.assembly-line";
/*
 * The engine cannot kill an exec'd process, so the wrapper records its pid in a
 * file and a timeout runs a second exec that kills its process group and its
 * whole tree (found through /proc, so it needs no procps in the image). The
 * engine starts each exec as a session leader, so the wrapper's pid is also the
 * group of everything the command starts, a double fork (`(sleep 99 &)`)
 * included. The group is stopped before anything is killed: a shell whose
 * child died first would otherwise run its next command (`sleep 32; echo done
 * > file`) before its own kill.
 *
 * A process that leaves both (`setsid cmd &`, then its parent exits) is found
 * by its mark: /proc/<pid>/environ holds SANDBOX_COMMAND_MARK_VARIABLE. stop_marked
 * stops every marked process, scanning again for any forked before it was
 * stopped, and leaves them in m_marked for the kill. Only a process that drops
 * or changes the variable (`env -i`) escapes this.
 */
const KILL_TREE_FUNCTION = [
  'kill_tree() { kill -STOP "$1" 2>/dev/null; for child in $(grep -l "^PPid:[[:space:]]*$1\\$" /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do kill_tree "$child"; done; kill -KILL "$1" 2>/dev/null; }',
  `stop_marked() { m_marked=; for m_round in 1 2 3 4 5 6 7 8 9 10; do m_found=; for m_environ in /proc/[0-9]*/environ; do m_pid=\${m_environ#/proc/}; m_pid=\${m_pid%/environ}; case " $m_marked " in *" $m_pid "*) continue;; esac; tr '\\0' '\\n' < "$m_environ" 2>/dev/null | grep -qxF -- "${SANDBOX_COMMAND_MARK_VARIABLE}=$1" && m_found="$m_found $m_pid"; done; [ -n "$m_found" ] || return 0; kill -STOP $m_found 2>/dev/null; m_marked="$m_marked$m_found"; done; }`,
  'kill_marked() { if [ -n "$m_marked" ]; then kill -KILL $m_marked 2>/dev/null; fi; }',
  // busybox kill reads "--" as a pid: a group is named "-PID" straight after the signal.
  'kill_command() { kill -STOP "-$1" 2>/dev/null; stop_marked "$2"; kill_tree "$1"; kill -KILL "-$1" 2>/dev/null; kill_marked; }',
  // The mark of the command whose pid file is $1.
  'mark_of() { m_name=${1##*/}; printf "%s" "${m_name%.pid}"; }',
].join("\n");
/*
 * The wrapper (run by `sh -c WRAPPER pidFile cwd argv...`) enters the command's
 * folder, records its own pid and runs the command as its child, marked (the
 * wrapper itself and the helpers it runs are not). When the command ends,
 * whatever it left running in its group or marked is killed, as the local
 * sandbox does: a command does not outlive its exec call, and its stream ends
 * when it does. Group members are found by reading /proc/<pid>/stat with
 * builtins only (a subshell of its own would be a member). A folder it cannot
 * enter is reported on stderr after the pid file's random name, which the
 * command (never started) cannot print; a missing /workspace is told apart, so
 * the sandbox can make it again.
 */
const WRAPPER = [
  KILL_TREE_FUNCTION,
  'mkdir -p "${0%/*}" 2>/dev/null',
  `if ! cd -- "$1" 2>/dev/null; then if [ ! -d /workspace ]; then printf "%s ${WORKSPACE_MISSING}\\n" "$0" >&2; elif [ -d "$1" ]; then printf "%s unusable\\n" "$0" >&2; elif [ -e "$1" ]; then printf "%s not-a-folder\\n" "$0" >&2; else printf "%s missing\\n" "$0" >&2; fi; exit 1; fi`,
  // The sentinel keeps a trailing newline $(...) would drop: a folder "/workspace<newline>" is outside.
  'case "$1" in /workspace|/workspace/*) al_pwd=$(pwd -P && echo .); case "${al_pwd%?.}" in /workspace|/workspace/*) ;; *) printf "%s outside\\n" "$0" >&2; exit 1;; esac;; esac',
  "shift",
  'echo $$ > "$0"',
  'al_mark=$(mark_of "$0")',
  `${SANDBOX_COMMAND_MARK_VARIABLE}="$al_mark" "$@"; al_code=$?`,
  'al_members=; { for al_stat in /proc/[0-9]*/stat; do read -r al_line < "$al_stat" || continue; set -- ${al_line##*) }; al_pid=${al_stat#/proc/}; al_pid=${al_pid%/stat}; [ "$3" = "$$" ] && [ "$al_pid" != "$$" ] && al_members="$al_members $al_pid"; done; } 2>/dev/null',
  'if [ -n "$al_members" ]; then kill -STOP $al_members; fi 2>/dev/null',
  'stop_marked "$al_mark"',
  'if [ -n "$al_members" ]; then kill -KILL $al_members; fi 2>/dev/null',
  "kill_marked",
  'rm -f "$0"',
  'exit "$al_code"',
].join("\n");
const KILL_TREE = [KILL_TREE_FUNCTION, 'mark=$(mark_of "$0"); pid=$(cat "$0" 2>/dev/null); case "$pid" in ""|*[!0-9]*) stop_marked "$mark"; kill_marked;; *) kill_command "$pid" "$mark";; esac; rm -f "$0"'].join("\n");
/*
 * Every pid file left in PID_DIR belongs to a command some earlier process
 * started and never saw end (it crashed, or lost the run). A file from before
 * a container restart may name a number now reused (PID 1 is never killed by
 * number); its mark is unique to the command.
 */
const KILL_LEFTOVERS = [
  KILL_TREE_FUNCTION,
  `for file in ${PID_DIR}/*.pid; do [ -f "$file" ] || continue; mark=$(mark_of "$file"); pid=$(cat "$file" 2>/dev/null); case "$pid" in ''|1|*[!0-9]*) stop_marked "$mark"; kill_marked;; *) kill_command "$pid" "$mark";; esac; rm -f "$file"; done`,
].join("\n");

/** Failures of an exec the engine refused to create or start (it answered with an error; a call it never answered may have gone through): the command never ran. */
const refusedBeforeStart = new WeakSet<object>();

/** Whether `error` is an exec's failure before its command started, so making the call again cannot run it twice. */
export function neverStarted(error: unknown): boolean {
  return typeof error === "object" && error !== null && refusedBeforeStart.has(error);
}

function markNeverStarted(error: unknown): never {
  if (typeof error === "object" && error !== null && statusOf((error as { cause?: unknown }).cause) !== undefined) refusedBeforeStart.add(error);
  throw error;
}

/** Run argv in the container; a timeout kills the process tree and reports exit code 124. */
export async function execInContainer(container: Docker.Container, request: ContainerExec): Promise<RawExecResult> {
  const pidFile = `${PID_DIR}/exec-${randomBytes(8).toString("hex")}.pid`;
  const exec = await engineCall(
    "exec create",
    () =>
    container.exec({
      Cmd: ["/bin/sh", "-c", WRAPPER, pidFile, request.cwd, ...request.argv],
      AttachStdin: request.stdin !== undefined,
      AttachStdout: true,
      AttachStderr: true,
      // The wrapper enters request.cwd itself: the engine would answer a missing folder with exit 126 and no reason.
      WorkingDir: "/",
      Env: Object.entries(request.env).map(([name, value]) => `${name}=${value}`),
      ...(request.user ? { User: request.user } : {}),
    }),
    request.engineTimeoutMs,
  ).catch(markNeverStarted);
  const stream = await engineCall("exec start", () => exec.start({ hijack: true, stdin: request.stdin !== undefined }), request.engineTimeoutMs).catch(markNeverStarted);
  const stdout = new CappedSink(request.maxOutputBytes);
  const stderr = new CappedSink(request.maxOutputBytes, Buffer.byteLength(pidFile) + 32);
  container.modem.demuxStream(stream, stdout, stderr);
  let kill: Promise<void> | undefined;
  const finished = new Promise<void>((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    // Not once: a command that ends before reading all its stdin may fail the write too.
    stream.on("error", resolve);
  });
  // Ending it closes the command's stdin: the engine passes the half-close on.
  if (request.stdin !== undefined) stream.end(request.stdin);
  const timer = setTimeout(() => {
    kill = stopTimedOutCommand(container, pidFile, request);
    // Awaited below once the stream has closed; a failure before then must not count as unhandled.
    kill.catch(() => undefined);
    // A hung engine never ends the stream: stop reading it now, the output so far is kept.
    stream.destroy();
  }, request.timeoutMs);
  try {
    await finished;
  } finally {
    clearTimeout(timer);
  }
  if (kill) {
    await kill;
    return { exitCode: TIMEOUT_EXIT_CODE, stdout: stdout.bytes(), stderr: stderr.bytes(), timedOut: true, truncated: stdout.truncated || stderr.truncated };
  }
  const inspected = await engineCall("exec inspect", () => exec.inspect(), request.engineTimeoutMs);
  const refusal = inspected.ExitCode === 1 ? new RegExp(`^(\\S+) (${[...FOLDER_REFUSALS, WORKSPACE_MISSING].join("|")})\\n$`).exec(stderr.head().toString("utf8")) : null;
  if (refusal && refusal[1] === pidFile) {
    const workspaceMissing = refusal[2] === WORKSPACE_MISSING;
    return { folderRefusal: workspaceMissing ? "missing" : (refusal[2] as FolderRefusal), workspaceMissing, exitCode: 1, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), timedOut: false, truncated: false };
  }
  return {
    exitCode: inspected.ExitCode ?? -1,
    stdout: stdout.bytes(),
    stderr: stderr.bytes(),
    timedOut: false,
    truncated: stdout.truncated || stderr.truncated,
  };
}

/**
 * Stop every command an earlier process started in this container and did not
 * see end, so a run resumed elsewhere never races the command its crashed
 * owner left running (which nothing would ever time out).
 */
export async function killLeftoverCommands(container: Docker.Container, engineTimeoutMs: number): Promise<void> {
  await engineCall("stopping commands left running", () => runToEnd(container, ["/bin/sh", "-c", KILL_LEFTOVERS]), engineTimeoutMs);
}

/**
 * Kill a timed-out command's tree within engineTimeoutMs. An engine that does
 * not answer fails the call: the command may still be running, and waiting
 * for the engine would hold the tool call (and the run's lease) forever.
 */
async function stopTimedOutCommand(container: Docker.Container, pidFile: string, request: ContainerExec): Promise<void> {
  try {
    await withDeadline("stopping a timed-out command", runToEnd(container, ["/bin/sh", "-c", KILL_TREE, pidFile]), request.engineTimeoutMs);
  } catch (error) {
    const hung = isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE");
    const failure = hung ? `did not answer the call to stop it within ${request.engineTimeoutMs} ms` : `failed to stop it: ${engineMessage(error)}`;
    throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `a command timed out after ${request.timeoutMs} ms and the Docker engine ${failure}; it may still be running in the container`, {
      fix: (hung ? error.fix : engineError("stopping a timed-out command", error).fix) ?? "Check the engine with `docker info`.",
      cause: error,
      details: { timeoutMs: request.timeoutMs, engineTimeoutMs: request.engineTimeoutMs },
    });
  }
}

/** Run argv in the container and wait for it to end. A refusal by the engine means the container is gone or stopping, and its processes with it. */
async function runToEnd(container: Docker.Container, argv: string[]): Promise<void> {
  try {
    const killer = await container.exec({ Cmd: argv, AttachStdout: true, AttachStderr: true });
    const stream = await killer.start({ hijack: true, stdin: false });
    stream.resume();
    await new Promise((resolve) => {
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", resolve);
    });
  } catch (error) {
    if (statusOf(error) === undefined) throw error;
  }
}

export function toExecResult(raw: RawExecResult): ExecResult {
  return { exitCode: raw.exitCode, stdout: raw.stdout.toString("utf8"), stderr: raw.stderr.toString("utf8"), timedOut: raw.timedOut, truncated: raw.truncated };
}
