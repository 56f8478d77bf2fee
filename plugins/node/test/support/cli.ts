import { main } from "../../src/cli/main.js";
import type { CommandIO } from "../../src/cli/io.js";

/** Run the assembly-line command line in this process with `args`: its exit code and what it printed to each stream. */
export async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CommandIO = { out: (line) => void out.push(line), err: (line) => void err.push(line) };
  const code = await main(args, io);
  return { code, out: out.join("\n"), err: err.join("\n") };
}
