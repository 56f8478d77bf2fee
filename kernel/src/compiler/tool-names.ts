import { dirname } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";

const SNAKE_CASE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
/** Model APIs (OpenAI, Anthropic, Gemini) take function names of at most 64 characters. */
export const MAX_TOOL_NAME_LENGTH = 64;
const RULE = `snake_case: lower-case ASCII letters and digits in words joined by single underscores, starting with a letter, at most ${MAX_TOOL_NAME_LENGTH} characters`;

/** Refuse a `tools/` file whose stem the model could not be offered as a tool name, suggesting one it could. */
export function checkToolName(file: string, name: string): void {
  if (SNAKE_CASE.test(name) && name.length <= MAX_TOOL_NAME_LENGTH) return;
  const dir = dirname(file);
  const suggestion = suggestName(name);
  const rename = suggestion === undefined ? `Rename the file so its stem is ${RULE} (e.g. ${dir}/record_note.ts)` : `Rename the file to ${dir}/${suggestion}.ts`;
  const problem =
    name.length > MAX_TOOL_NAME_LENGTH
      ? `is ${name.length} characters; model APIs take at most ${MAX_TOOL_NAME_LENGTH}`
      : name.includes("__") && SNAKE_CASE.test(name.replace(/_{2,}/g, "_"))
        ? "has a double underscore, which names connection tools (<connection>__<tool>)"
        : "is not snake_case";
  throw new AssemblyLineError("AL_ERR_TOOL_NAME", `${file}: tool name "${name}" ${problem}`, {
    fix: `${rename}; the filename stem is the name the model sees${name.length > MAX_TOOL_NAME_LENGTH ? ` (at most ${MAX_TOOL_NAME_LENGTH} characters)` : ""}.`,
  });
}

/** The snake_case form of a stem, or undefined when there is none to offer (a leading digit, or too long). */
function suggestName(name: string): string | undefined {
  const snake = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
  return SNAKE_CASE.test(snake) && snake.length <= MAX_TOOL_NAME_LENGTH && snake !== name ? snake : undefined;
}
