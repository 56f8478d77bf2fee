import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import type Docker from "dockerode";
import type { ExecResult } from "@assemblyline-agents/core";
import { engineCall, withDeadline } from "../engine.js";

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
  /** Deadline of each engine call around the command (not of the command itself). */
  engineTimeoutMs?: number;
}

export interface RawExecResult {
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
  truncated = false;

  constructor(private readonly limit: number) {
    super();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    const room = this.limit - this.kept;
    if (chunk.length > room) this.truncated = true;
    if (room > 0) {
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.chunks.push(Buffer.from(part));
      this.kept += part.length;
    }
    done();
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** Where each running command's pid file is, inside the container. */
export const PID_DIR = "/tmp/.assembly-line";
/*
 * The engine cannot kill an exec'd process, so the wrapper records its pid in a
 * file and a timeout runs a second exec that kills that process's whole tree
 * (found through /proc, so it needs no procps in the image). Each process is
 * stopped before its children are killed: a shell whose child died first would
 * otherwise run its next command (`sleep 32; echo done > file`) before its own kill.
 */
const WRAPPER = 'mkdir -p "${0%/*}" 2>/dev/null; echo $$ > "$0"; exec "$@"';
const KILL_TREE_FUNCTION =
  'kill_tree() { kill -STOP "$1" 2>/dev/null; for child in $(grep -l "^PPid:[[:space:]]*$1\\$" /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do kill_tree "$child"; done; kill -KILL "$1" 2>/dev/null; }';
const KILL_TREE = [KILL_TREE_FUNCTION, 'pid=$(cat "$0" 2>/dev/null) && [ -n "$pid" ] && kill_tree "$pid"; rm -f "$0"'].join("\n");
/*
 * Every pid file left in PID_DIR belongs to a command some earlier process
 * started and never saw end (it crashed, or lost the run). PID 1 is skipped: a
 * file from before a container restart may name a number now reused.
 */
const KILL_LEFTOVERS = [
  KILL_TREE_FUNCTION,
  `for file in ${PID_DIR}/*.pid; do [ -f "$file" ] || continue; pid=$(cat "$file" 2>/dev/null); case "$pid" in ''|1|*[!0-9]*) ;; *) kill_tree "$pid";; esac; rm -f "$file"; done`,
].join("\n");

/** Run argv in the container; a timeout kills the process tree and reports exit code 124. */
export async function execInContainer(container: Docker.Container, request: ContainerExec): Promise<RawExecResult> {
  const pidFile = `${PID_DIR}/exec-${randomBytes(8).toString("hex")}.pid`;
  const exec = await engineCall(
    "exec create",
    () =>
    container.exec({
      Cmd: ["/bin/sh", "-c", WRAPPER, pidFile, ...request.argv],
      AttachStdout: true,
      AttachStderr: true,
      WorkingDir: request.cwd,
      Env: Object.entries(request.env).map(([name, value]) => `${name}=${value}`),
      ...(request.user ? { User: request.user } : {}),
    }),
    request.engineTimeoutMs,
  );
  const stream = await engineCall("exec start", () => exec.start({ hijack: true, stdin: false }), request.engineTimeoutMs);
  const stdout = new CappedSink(request.maxOutputBytes);
  const stderr = new CappedSink(request.maxOutputBytes);
  container.modem.demuxStream(stream, stdout, stderr);
  let timedOut = false;
  const finished = new Promise<void>((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", resolve);
  });
  const timer = setTimeout(() => {
    timedOut = true;
    void killTree(container, pidFile).finally(() => {
      // If the stream still has not ended a while after the kill, stop waiting for it.
      setTimeout(() => stream.destroy(), 5_000).unref();
    });
  }, request.timeoutMs);
  try {
    await finished;
  } finally {
    clearTimeout(timer);
  }
  const inspected = await engineCall("exec inspect", () => exec.inspect(), request.engineTimeoutMs);
  if (!timedOut) void container.exec({ Cmd: ["rm", "-f", pidFile] }).then((cleanup) => cleanup.start({})).catch(() => undefined);
  return {
    exitCode: timedOut ? TIMEOUT_EXIT_CODE : (inspected.ExitCode ?? -1),
    stdout: stdout.bytes(),
    stderr: stderr.bytes(),
    timedOut,
    truncated: stdout.truncated || stderr.truncated,
  };
}

/**
 * Stop every command an earlier process started in this container and did not
 * see end, so a run resumed elsewhere never races the command its crashed
 * owner left running (which nothing would ever time out).
 */
export async function killLeftoverCommands(container: Docker.Container, engineTimeoutMs: number): Promise<void> {
  await withDeadline("stopping commands left running", runToEnd(container, ["/bin/sh", "-c", KILL_LEFTOVERS]), engineTimeoutMs);
}

async function killTree(container: Docker.Container, pidFile: string): Promise<void> {
  await runToEnd(container, ["/bin/sh", "-c", KILL_TREE, pidFile]);
}

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
  } catch {
    // The container is gone or stopping: the process went with it.
  }
}

export function toExecResult(raw: RawExecResult): ExecResult {
  return { exitCode: raw.exitCode, stdout: raw.stdout.toString("utf8"), stderr: raw.stderr.toString("utf8"), timedOut: raw.timedOut, truncated: raw.truncated };
}
