import { statSync } from "node:fs";
import { resolve } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";
import { stringOption, type ParsedCommand } from "./args.js";

/**
 * The folder `--state-dir` (or the config's `stateDir`) names, checked before
 * anything opens it: an empty value or a file is refused, and a command that
 * works on what is already kept there (`mustExist`: runs list/show/migrate,
 * approve, deny, answer, resume, skills list/show/diff) refuses a --state-dir
 * that does not exist rather than creating an empty state store there.
 * Without either, the command uses <agent>/.assembly-line/state, created on
 * first use, as before.
 */
export function stateDirOption(parsed: ParsedCommand, options: { mustExist: boolean; usage: string }): string | undefined {
  const value = stringOption(parsed, "state-dir");
  if (value === undefined) return undefined;
  const fromConfig = parsed.configured?.includes("state-dir") === true;
  const named = fromConfig ? `the config's stateDir ${value}` : `--state-dir ${value}`;
  const leaveOut = fromConfig ? "fix stateDir in the project config" : "leave --state-dir out to use <agent>/.assembly-line/state";
  if (value.trim() === "") {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", "--state-dir is empty", { fix: `Give the folder runs are kept in, or leave --state-dir out to use <agent>/.assembly-line/state. usage: ${options.usage}` });
  }
  const folder = resolve(value);
  let isFolder: boolean | undefined;
  let problem = "is a file, not a folder";
  try {
    isFolder = statSync(folder).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTDIR") {
      isFolder = false;
      problem = "cannot be a folder: part of its path is a file";
    } else if (code !== "ENOENT") {
      throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${named} cannot be read (${folder}): ${(error as Error).message}`, { fix: `Give a folder this user can read and write, or ${leaveOut}.`, cause: error });
    }
  }
  if (isFolder === false) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${named} ${problem} (${folder})`, { fix: `Give the folder runs are kept in, or ${leaveOut}. usage: ${options.usage}` });
  }
  // A mistyped folder given on the command line is refused; the config's stateDir, like the default folder, is simply empty before the first run.
  if (isFolder === undefined && options.mustExist && !fromConfig) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--state-dir ${value} does not exist (${folder}): no runs are kept there`, {
      fix: `Check the path: it is the folder \`assembly-line run --state-dir\` kept its runs in; ${leaveOut}.`,
    });
  }
  return value;
}
