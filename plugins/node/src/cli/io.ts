/** Where a command writes: stdout for results, stderr for diagnostics. */
export interface CommandIO {
  out(line: string): void;
  err(line: string): void;
}

export const processIO: CommandIO = {
  out: (line) => process.stdout.write(line + "\n"),
  err: (line) => process.stderr.write(line + "\n"),
};
