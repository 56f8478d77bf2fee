import { utf8Boundary, type ExecResult } from "@assemblyline-agents/core";
import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:os";
import type { Readable } from "node:stream";

/** The exit code a timed-out command reports, as GNU `timeout` does. */
export const TIMEOUT_EXIT_CODE = 124;
/**
 * After the shell exits and its process group is killed, how long to wait for the
 * pipes to close. Only a process that left the group (setsid, nohup + setsid) can
 * hold them open longer; its later output is dropped.
 */
const PIPE_DRAIN_MS = 500;

export interface ShellRequest {
  command: string;
  /** Host directory the shell starts in. */
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** Cap for stdout and for stderr, each. */
  maxOutputBytes: number;
  /** Told the child as soon as it is spawned, and again (null) when it is done. */
  track?(child: ChildProcess | null): void;
  /** Kill what the command started outside its process group; run when the shell exits, and waited for before the result. */
  killEscaped?(): Promise<void>;
}

/**
 * Run `/bin/sh -c command` as the leader of its own process group and wait for it.
 * On timeout the whole group gets SIGKILL and the result is exitCode 124,
 * timedOut true. When the shell exits on its own, what it left running in its
 * group is killed too, and `killEscaped` stops what left the group: a command
 * does not outlive its exec call.
 */
export function runShell(request: ShellRequest): Promise<ExecResult> {
  return new Promise<ExecResult>((resolvePromise, rejectPromise) => {
    let child: ChildProcess;
    try {
      child = spawn("/bin/sh", ["-c", request.command], {
        cwd: request.cwd,
        env: request.env,
        // A new session makes the shell a group leader, so one kill reaches every process it starts.
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      rejectPromise(error);
      return;
    }
    request.track?.(child);
    const stdout = new CappedOutput(request.maxOutputBytes);
    const stderr = new CappedOutput(request.maxOutputBytes);
    let timedOut = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let openPipes = 2;
    let escapedKilled = request.killEscaped === undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let settled = false;

    const timeoutTimer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, request.timeoutMs);

    const finish = () => {
      if (settled || exit === undefined || openPipes > 0 || !escapedKilled) return;
      settled = true;
      clearTimeout(timeoutTimer);
      clearTimeout(drainTimer);
      request.track?.(null);
      resolvePromise({
        exitCode: timedOut ? TIMEOUT_EXIT_CODE : exitCodeOf(exit.code, exit.signal),
        stdout: stdout.text(),
        stderr: stderr.text(),
        timedOut,
        truncated: stdout.truncated || stderr.truncated,
      });
    };
    const watch = (stream: Readable | null, sink: CappedOutput) => {
      if (!stream) {
        openPipes -= 1;
        return;
      }
      stream.on("data", (chunk: Buffer) => sink.push(chunk));
      // A destroyed stream emits close but may never emit end; close covers both.
      stream.once("close", () => {
        openPipes -= 1;
        finish();
      });
      stream.on("error", () => undefined);
    };
    watch(child.stdout, stdout);
    watch(child.stderr, stderr);

    child.once("error", (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timeoutTimer);
      request.track?.(null);
      killGroup(child);
      rejectPromise(error);
    });
    child.once("exit", (code, signal) => {
      exit = { code, signal };
      killGroup(child);
      // What escaped the group may hold the pipes open: killing it lets them close now.
      void request.killEscaped?.()
        .catch(() => undefined)
        .then(() => {
          escapedKilled = true;
          finish();
        });
      drainTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, PIPE_DRAIN_MS);
      finish();
    });
  });
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Shell convention: a process killed by signal N exits 128 + N. */
function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const number = signal ? constants.signals[signal] : undefined;
  return number === undefined ? 1 : 128 + number;
}

/** Keeps the first `cap` bytes of a stream and notes whether more came. */
class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    const room = this.cap - this.size;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(kept);
    this.size += kept.length;
  }

  text(): string {
    const bytes = Buffer.concat(this.chunks, this.size);
    return bytes.subarray(0, this.truncated ? utf8Boundary(bytes) : bytes.length).toString("utf8");
  }
}
