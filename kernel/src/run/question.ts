import type { AskQuestionOptions } from "@assemblyline-agents/core";

/**
 * Thrown by `ctx.askQuestion` to unwind the tool body; the pipeline turns it into
 * a `waiting_input` pause. Recognised by brand, not `instanceof`.
 */
export class QuestionSuspension extends Error {
  readonly $$type = "assembly-line.question-suspension";
  constructor(
    readonly question: string,
    readonly options: AskQuestionOptions | undefined,
  ) {
    super(`run suspended to ask: ${question}`);
    this.name = "QuestionSuspension";
  }
}

export function isQuestionSuspension(error: unknown): error is QuestionSuspension {
  return typeof error === "object" && error !== null && (error as { $$type?: unknown }).$$type === "assembly-line.question-suspension";
}
