import { isAssemblyLineError } from "@assemblyline-agents/core";
import { useKernelHost } from "@assemblyline-agents/registry";
import { kernelHost } from "@assemblyline-agents/runtime";
import { automationsCommand } from "./commands/automations.js";
import { buildCommand } from "./commands/build.js";
import { deployCommand } from "./commands/deploy.js";
import { runCommand } from "./commands/run.js";
import { pluginsCommand } from "./commands/plugins.js";
import { devCommand, startCommand } from "./commands/serve.js";
import { answerCommand, approveCommand, denyCommand, resumeCommand, runsCommand } from "./commands/runs.js";
import { testCommand } from "./commands/test.js";
import { skillsCommand } from "./commands/skills.js";
import { processIO, type CommandIO } from "./io.js";

const HELP = `assembly-line <command>

  build <agentDir>                     compile an agent folder into .assembly-line/manifest.json
  run <agentDir> --message "..."       run one conversation turn and print its timeline
      [--model <spec>]                 provider/model (e.g. openai/gpt-5.4-mini), or scripted:<file.json>
      [--base-url <url>] [--api <api>] serve the model from an OpenAI- or Anthropic-compatible server
      [--offline-script <file.json>]   use this scripted conversation when the model's API key is not set
      [--approve all|none]             decide approval pauses now instead of leaving the run paused
      [--answer "..."]                 answer a question the run asks
      [--conversation <id>]            continue a conversation (history reaches the model)
      [--stream]                       print the model's text deltas (stderr) as they arrive
      [--json]                         one event object per line
  runs list [--status <s>]             runs of the agent (--agent <dir>, default .)
  runs show <runId>                    a run's timeline, usage and what it waits for
  runs migrate <runId> --to current    move a paused run to the current build
  approve <runId> [<callId>]           approve a paused tool call and resume the run
  deny <runId> [<callId>]              deny it; the model receives a denial result
  answer <runId> "text"                answer the run's question and resume it
  resume <runId>                       continue a run left running by a process that died
  test <agentDir> --conversation <file.json> --replay-stress
                                       stop a scripted run after every durable write, resume it, report differences
  automations list                     the agent's automations: schedule, next due time, paused (--agent <dir>)
  automations run <name>               start one run of an automation now and print it
  automations pause|resume <name>      stop / restart an automation's schedule (survives restarts)
  skills list | show <name> | diff <name> | reset <name>
                                       the durable skill store: what changed since the seed, and undo it
                                       ([--subagent <path>] for a subagent's skills)
  dev <agentDir> [--port <n>]          serve the agent over HTTP in dev mode (local defaults, readable logs)
  start <artifactDir> [--port <n>]     production boot of a built artifact (<agentDir>/.assembly-line)
  deploy <agentDir> --target local|docker|vps|fly|railway
                                       build and ship the agent; secrets are passed from env, never written
                                       into the artifact (run it without arguments for each target's flags)
  plugins list | search <words> | info <id> | add <id> | new <name> --slot <slot> | verify [dir]
                                       the plugin marketplace: find, install and check adapter plugins

  Runs live in <agentDir>/.assembly-line/state (or --state-dir <dir>); every command
  that takes a run id also takes --agent <agentDir>.
`;

const COMMANDS: Record<string, (args: string[], io: CommandIO) => Promise<number>> = {
  build: buildCommand,
  run: runCommand,
  runs: runsCommand,
  approve: approveCommand,
  deny: denyCommand,
  answer: answerCommand,
  resume: resumeCommand,
  skills: skillsCommand,
  plugins: pluginsCommand,
  test: testCommand,
  automations: automationsCommand,
  deploy: deployCommand,
  dev: (args, io) => devCommand(args, io),
  start: (args, io) => startCommand(args, io),
};

// The registry loads and verifies plugins against this host's kernel.
useKernelHost(kernelHost);

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
