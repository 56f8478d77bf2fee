/** What a replay-stress run can find at a durable boundary. */
export type ReplayProblemKind =
  /** The run ended differently from the uninterrupted recording (status or final text). */
  | "output_differs"
  /** A tool call recorded completed before the stop was executed again after it. */
  | "completed_call_reran"
  /** A durable step was recorded completed twice. */
  | "step_reran"
  /** State the run wrote (memory, files, conversation history) differs from the recording: a write without an idempotency key applied twice. */
  | "side_effect_repeated"
  /** A tool call ended as an error or a failure where the recording has a result, or the other way round: run again after the stop, it did not take its own earlier effect as done. */
  | "call_outcome_differs"
  /** The run's log is not contiguous, or records one completion twice. */
  | "events_out_of_order"
  /** The run did not reach a final state after the resume. */
  | "did_not_finish";

export interface ReplayProblem {
  /** 1-based: the run was stopped after its `boundary`-th durable write. */
  boundary: number;
  /** What that write was, e.g. `appendEvents tool.called` or `writeMemory notes/x.txt`. */
  after: string;
  kind: ReplayProblemKind;
  detail: string;
}

export interface ReplayStressReport {
  /** Durable writes of the uninterrupted run; each was tried as a stopping point. */
  boundaries: number;
  /** How the uninterrupted run ended. */
  recorded: { status: string; text: string | null };
  problems: ReplayProblem[];
}

/** One line per problem, for test failures and the CLI. */
export function describeReplayProblems(report: ReplayStressReport): string[] {
  return report.problems.map((problem) => `boundary ${problem.boundary} (after ${problem.after}): ${problem.kind}: ${problem.detail}`);
}
