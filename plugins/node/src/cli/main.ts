import { Console } from "node:console";
import { errorSummary, type AssemblyLineError } from "@assemblyline-agents/core";
import { EXIT } from "./exit-codes.js";
import { processIO, type CommandIO } from "./io.js";
import { colors, errorEnvelope, type ErrorBody } from "./output.js";
import { runCommandLine } from "./program.js";
import type { CommandContext } from "./args.js";

export { stoppedDrivingARun } from "./interrupt.js";

/**
 * The `assembly-line` command line: runs the command and prints any error,
 * as text on stderr or, with --json, as the error envelope on stdout. Returns
 * the exit code (docs/cli.md lists them).
 */
export async function main(argv: string[], io: CommandIO = processIO, context: CommandContext = {}): Promise<number> {
  const json = argv.includes("--json");
  const restoreStdout = json ? stdoutToStderr() : () => {};
  try {
    return await runCommandLine(argv, io, context);
  } catch (error) {
    // The error path alone loads the SDK's error helpers: --help and --version stay light.
    const { isAssemblyLineError } = await import("@assemblyline-agents/core");
    const body = isAssemblyLineError(error) ? knownError(error) : unexpectedError(error);
    if (json) io.out(errorEnvelope(body));
    else {
      const paint = colors(io, "err");
      io.err(`${paint.red(paint.bold("error"))} ${paint.bold(body.code)}: ${body.message}`);
      if (body.fix) io.err(`  ${paint.yellow("fix:")} ${body.fix}`);
    }
    return body.code === "AL_ERR_CLI_USAGE" ? EXIT.usage : EXIT.failed;
  } finally {
    restoreStdout();
  }
}

/**
 * With --json, stdout holds exactly one envelope: what the agent's own code (a tool, a
 * hook, a library) prints with console.log or process.stdout.write goes to stderr for as
 * long as the command runs, beside the logs, instead of in front of the envelope where it
 * breaks `| jq`. The envelope is written with stdout's own writer (io.ts). A child process
 * that inherits file descriptor 1 still writes to it.
 */
function stdoutToStderr(): () => void {
  const stdout = process.stdout as { write: typeof process.stdout.write };
  const savedWrite = stdout.write;
  stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  const toStderr = new Console({ stdout: process.stderr, stderr: process.stderr });
  const target = console as unknown as Record<string, unknown>;
  const saved: Record<string, unknown> = {};
  for (const name of ["log", "info", "debug", "dir", "dirxml", "table", "group", "groupCollapsed", "groupEnd", "count", "countReset", "time", "timeEnd", "timeLog"]) {
    saved[name] = target[name];
    target[name] = (toStderr as unknown as Record<string, unknown>)[name];
  }
  return () => {
    Object.assign(target, saved);
    stdout.write = savedWrite;
  };
}

/** An AssemblyLineError's code, its message without the code prefix and fix suffix it carries, and its fix. */
function knownError(error: AssemblyLineError): ErrorBody {
  return { code: error.code, message: errorSummary(error), fix: error.fix ?? null };
}

/** Anything else is a bug: reported with its stack. */
function unexpectedError(error: unknown): ErrorBody {
  return {
    code: "AL_ERR_CLI_UNEXPECTED",
    message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    fix: "This is a bug in assembly-line or a plugin: report it with the command line and this message.",
  };
}
