import { AssemblyLineError } from "@assemblyline-agents/core";
import type { CommandIO } from "./io.js";

/** A command's options by long flag name (`state-dir`), and its positional arguments, as the command line parser left them. */
export interface ParsedCommand {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  /** The flags (by long name) whose values the project config filled rather than the command line. */
  configured?: string[];
  /** The config's model, for a command continuing a run, when --model on the command line kept it from filling `model`. */
  configModel?: string;
}

export function requirePositional(positionals: string[], index: number, name: string, usage: string): string {
  const value = positionals[index];
  if (value === undefined) throw new AssemblyLineError("AL_ERR_CLI_USAGE", `missing <${name}>`, { fix: `usage: ${usage}` });
  return value;
}

/**
 * A text the reader must give (the message, an answer). Empty or blank is refused: it is
 * most often a shell variable that was not set, and a run cannot take it back.
 */
export function requireText(value: string, name: string, fix: string, usage: string): string {
  if (value.trim() === "") throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${name} is empty`, { fix: `${fix} usage: ${usage}` });
  return value;
}

export function stringOption(parsed: ParsedCommand, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : undefined;
}

/** An option's value when the command line gave it, not the project config (which fills it again for a command printed to follow). */
export function commandLineOption(parsed: ParsedCommand, name: string): string | undefined {
  return parsed.configured?.includes(name) ? undefined : stringOption(parsed, name);
}

export function jsonOption(parsed: ParsedCommand): boolean {
  return parsed.values.json === true;
}

/** What an embedding caller (a test, a host) hands the commands besides the command line. */
export interface CommandContext {
  /** `dev` and `start`: see the handle when listening, and keep process signals alone. */
  serve?: import("./commands/serve.js").ServeControl;
}

/** A command's body: it reads the parsed command line and returns the exit code. */
export type CommandHandler = (parsed: ParsedCommand, io: CommandIO, context: CommandContext) => Promise<number>;
