/** Where a command writes: stdout for results, stderr for diagnostics. */
export interface CommandIO {
  out(line: string): void;
  err(line: string): void;
  /** Text to stderr as it is, without a newline (streamed model deltas). Default: `err` per chunk. */
  errChunk?(text: string): void;
  /** stdout takes ANSI colours (a TTY, NO_COLOR unset). Default false. */
  outColor?: boolean;
  /** stderr takes ANSI colours. Default false. */
  errColor?: boolean;
  /** stderr is a terminal a person watches: live progress is shown there. Default false. */
  errTTY?: boolean;
}

/** Colours follow the NO_COLOR / FORCE_COLOR conventions, then whether the stream is a terminal. */
export function takesColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0") return true;
  return stream.isTTY === true && env.TERM !== "dumb";
}

/** stdout's own writer, taken before `--json` points `process.stdout.write` at stderr for the command's length. */
const writeStdout = process.stdout.write.bind(process.stdout);

export const processIO: CommandIO = {
  out: (line) => writeStdout(line + "\n"),
  err: (line) => process.stderr.write(line + "\n"),
  errChunk: (text) => process.stderr.write(text),
  outColor: takesColor(process.stdout),
  errColor: takesColor(process.stderr),
  errTTY: process.stderr.isTTY === true,
};
