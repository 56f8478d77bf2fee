import type { AskQuestionOptions } from "@assemblyline-agents/core";
import { findNonJson } from "../json-check.js";

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

/** What makes `ctx.askQuestion(question, options)` unrecordable, as a sentence; undefined when it can be recorded. */
export function questionProblem(question: unknown, options: AskQuestionOptions | undefined): string | undefined {
  if (typeof question !== "string") return `ctx.askQuestion question is a ${question === null ? "null" : typeof question}, not a string`;
  if (options === undefined || options === null) return undefined;
  const { choices, metadata } = options;
  if (choices !== undefined) {
    if (!Array.isArray(choices)) return "ctx.askQuestion choices is not an array of strings";
    const index = choices.findIndex((choice) => typeof choice !== "string");
    if (index !== -1) return `ctx.askQuestion choices[${index}] is a ${typeof choices[index]}, not a string`;
  }
  return metadata === undefined ? undefined : findNonJson(metadata, "ctx.askQuestion metadata");
}
