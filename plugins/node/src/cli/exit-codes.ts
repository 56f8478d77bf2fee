/** What `assembly-line` exits with; docs/cli.md lists the same table. */
export const EXIT = {
  /** The command did what it was asked; a run completed. */
  ok: 0,
  /** The command or the run failed (the error or run.failed says why). */
  failed: 1,
  /** The command line is wrong: unknown command or option, missing argument, bad value (AL_ERR_CLI_USAGE). */
  usage: 2,
  /** The run paused for a decision: an approval, a budget extension or an answer (approve/deny/answer continue it). */
  paused: 3,
  /** The run is left queued or running (its process stopped before the end); `resume` continues it. */
  unfinished: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
