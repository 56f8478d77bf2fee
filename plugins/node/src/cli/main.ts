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
    const body = errorBody(error);
    if (argv.includes("--json")) io.out(errorEnvelope(body));
    else {
      const paint = colors(io, "err");
      io.err(`${paint.red(paint.bold("error"))} ${paint.bold(body.code)}: ${body.message}`);
      if (body.fix) io.err(`  ${paint.yellow("fix:")} ${body.fix}`);
    }
    return body.code === "AL_ERR_CLI_USAGE" ? EXIT.usage : EXIT.failed;
  }
}

/** An AssemblyLineError's code, bare message and fix; anything else is unexpected and keeps its stack for the report. */
function errorBody(error: unknown): ErrorBody {
  const candidate = error as { name?: unknown; code?: unknown; message?: unknown; fix?: unknown; stack?: unknown };
  if (candidate && candidate.name === "AssemblyLineError" && typeof candidate.code === "string") {
    const prefix = `${candidate.code}: `;
    let message = String(candidate.message);
    if (message.startsWith(prefix)) message = message.slice(prefix.length);
    const fix = typeof candidate.fix === "string" ? candidate.fix : null;
    if (fix !== null) message = message.replace(`\n  fix: ${fix}`, "");
    return { code: candidate.code, message, fix };
  }
  return {
    code: "AL_ERR_CLI_UNEXPECTED",
    message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    fix: "This is a bug in assembly-line or a plugin: report it with the command line and this message.",
  };
}
