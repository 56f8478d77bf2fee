import { isAssemblyLineError } from "@assemblyline-agents/core";
import { buildCommand } from "./commands/build.js";
import { runCommand } from "./commands/run.js";
import { processIO, type CommandIO } from "./io.js";

const HELP = `assembly-line <command>

  build <agentDir>                 compile an agent folder into .assembly-line/manifest.json
  run <agentDir> --message "..."   run one conversation turn and print its timeline
      [--model <spec>]             e.g. openai/gpt-5.4-mini, or scripted:<file.json>
      [--approve all|none]         decide approval pauses
      [--answer "..."]             answer a question the run asks
      [--json]                     one event object per line
`;

const COMMANDS: Record<string, (args: string[], io: CommandIO) => Promise<number>> = {
  build: buildCommand,
  run: runCommand,
};

export async function main(argv: string[], io: CommandIO = processIO): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    io.out(HELP);
    return name === undefined ? 1 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.err(`unknown command "${name}"\n\n${HELP}`);
    return 2;
  }
  try {
    return await command(args, io);
  } catch (error) {
    if (isAssemblyLineError(error)) {
      io.err(error.message);
      return error.code === "AL_ERR_CLI_USAGE" ? 2 : 1;
    }
    throw error;
  }
}
