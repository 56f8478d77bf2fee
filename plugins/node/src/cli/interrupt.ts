import type { OpenEveRuntime, RunResult } from "@assemblyline-agents/runtime";
import type { CommandIO } from "./io.js";

/** The exit code of a process ended by SIGINT/SIGTERM without reporting (128 + SIGINT). */
export const EXIT_INTERRUPTED = 130;

let stoppedDriving = false;

/**
 * true once a signal made a command stop waiting for the run it drove: the run is still executing
 * in this process (the runtime cannot abort a turn part way), so the process must end now rather
 * than when the run does (bin/assembly-line.js).
 */
export function stoppedDrivingARun(): boolean {
  return stoppedDriving;
}

export type Driven = { result: RunResult; interrupted: false } | { result: RunResult; interrupted: true };

/**
 * Drive a run (run, approve, deny, answer, resume, automations run) until it rests or the first
 * SIGINT/SIGTERM. On the signal the command stops waiting and reads the run as stored, queued or
 * running, to report it like any run its process left unfinished: `resume` continues it (the run
 * is not cancelled). A second signal ends the process at once (130). Closing the runtime instead
 * would wait for the turn to end, which is what Ctrl-C asks not to do.
 */
export async function driveUntilSignal(drive: Promise<RunResult>, runIdSoFar: () => string | undefined, runtime: Pick<OpenEveRuntime, "getRun">, io: CommandIO): Promise<Driven> {
  let signalled = 0;
  let onFirst: () => void = () => undefined;
  const first = new Promise<void>((resolve) => (onFirst = resolve));
  const onSignal = () => {
    signalled += 1;
    if (signalled > 1) process.exit(EXIT_INTERRUPTED);
    onFirst();
  };
  const signals = ["SIGINT", "SIGTERM"] as const;
  for (const signal of signals) process.on(signal, onSignal);
  try {
    const ended = await Promise.race([drive.then((result) => ({ result })), first.then(() => undefined)]);
    if (ended) return { result: ended.result, interrupted: false };
    stoppedDriving = true;
    // The run stays unfinished either way: whatever the drive does from here is not waited for.
    drive.catch(() => undefined);
    const runId = runIdSoFar();
    if (runId === undefined) {
      io.err("interrupted before a run was created");
      process.exit(EXIT_INTERRUPTED);
    }
    const result = await runtime.getRun(runId);
    // The stored run may show an end the drive reached just before the signal; otherwise it is left queued or running (exit 4).
    return { result, interrupted: true };
  } finally {
    for (const signal of signals) process.off(signal, onSignal);
  }
}
