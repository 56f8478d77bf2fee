import { parseArgs, type ParseArgsConfig } from "node:util";
import { AssemblyLineError } from "@assemblyline-agents/core";

export interface ParsedCommand {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** node:util parseArgs with errors that say which command and how to call it. */
export function parseCommand(args: string[], options: NonNullable<ParseArgsConfig["options"]>, usage: string): ParsedCommand {
  try {
    const parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: parsed.values as ParsedCommand["values"], positionals: parsed.positionals };
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", (error as Error).message, { fix: `usage: ${usage}` });
  }
}

export function requirePositional(positionals: string[], index: number, name: string, usage: string): string {
  const value = positionals[index];
  if (value === undefined) throw new AssemblyLineError("AL_ERR_CLI_USAGE", `missing <${name}>`, { fix: `usage: ${usage}` });
  return value;
}

export function stringOption(parsed: ParsedCommand, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : undefined;
}
