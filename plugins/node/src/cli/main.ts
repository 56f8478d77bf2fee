import type { AssemblyLineError } from "@assemblyline-agents/core";
import { EXIT } from "./exit-codes.js";
import { processIO, type CommandIO } from "./io.js";
import { colors, errorEnvelope, type ErrorBody } from "./output.js";
import { runCommandLine } from "./program.js";
import type { CommandContext } from "./args.js";

/**
 * The `assembly-line` command line: runs the command and prints any error,
 * as text on stderr or, with --json, as the error envelope on stdout. Returns
 * the exit code (docs/cli.md lists them).
 */
export async function main(argv: string[], io: CommandIO = processIO, context: CommandContext = {}): Promise<number> {
  try {
    return await runCommandLine(argv, io, context);
  } catch (error) {
    // The error path alone loads the SDK's error helpers: --help and --version stay light.
    const { isAssemblyLineError } = await import("@assemblyline-agents/core");
    const body = isAssemblyLineError(error) ? knownError(error) : unexpectedError(error);
    if (argv.includes("--json")) io.out(errorEnvelope(body));
    else {
      const paint = colors(io, "err");
      io.err(`${paint.red(paint.bold("error"))} ${paint.bold(body.code)}: ${body.message}`);
      if (body.fix) io.err(`  ${paint.yellow("fix:")} ${body.fix}`);
    }
    return body.code === "AL_ERR_CLI_USAGE" ? EXIT.usage : EXIT.failed;
  }
}

/** An AssemblyLineError's code, its message without the code prefix and fix suffix it carries, and its fix. */
function knownError(error: AssemblyLineError): ErrorBody {
  let message = error.message;
  if (message.startsWith(`${error.code}: `)) message = message.slice(`${error.code}: `.length);
  if (error.fix !== undefined) message = message.replace(`\n  fix: ${error.fix}`, "");
  return { code: error.code, message, fix: error.fix ?? null };
}

/** Anything else is a bug: reported with its stack. */
function unexpectedError(error: unknown): ErrorBody {
  return {
    code: "AL_ERR_CLI_UNEXPECTED",
    message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    fix: "This is a bug in assembly-line or a plugin: report it with the command line and this message.",
  };
}
