import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command, CommanderError, Option } from "commander";
import pc from "picocolors";
import type { CommandContext, CommandHandler, ParsedCommand } from "./args.js";
import type { ConfigKey } from "./config.js";
import type { CommandIO } from "./io.js";
import { envelope } from "./output.js";

// This file only describes the command line: every command's module is imported
// when that command runs, so --help, --version and light commands skip the model
// stack, the registry and the kernel runtime.

const VERSION = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Which config key fills which flag when the flag is not given. */
type ConfigFill = Partial<Record<string, ConfigKey>>;

interface LeafSpec {
  /** Loads the command's body. */
  load: () => Promise<CommandHandler>;
  /** Flags the project config fills. */
  config?: ConfigFill;
  /** The first positional is the agent folder (or, with "artifact", its build): config `agent`, else ".". */
  agentPositional?: "agent" | "artifact";
  /**
   * Flags the command cannot run without. Checked here rather than as commander's
   * mandatory options, which are checked before unknown ones and would hide the
   * "did you mean" of a mistyped required flag.
   */
  required?: string[];
  /** The command continues a stored run (approve, deny, answer, resume): its --model only repeats the run's own. */
  continuesRun?: true;
}

const MODEL_FILL: ConfigFill = { model: "model", "base-url": "baseUrl", api: "api" };
const STORE_FILL: ConfigFill = { agent: "agent", "state-dir": "stateDir" };
const AGENT_FILL: ConfigFill = { ...STORE_FILL, ...MODEL_FILL };

function examples(command: Command, lines: string[]): Command {
  return command.addHelpText("after", `\nExamples:\n${lines.map((line) => `  $ ${line}`).join("\n")}`);
}

function jsonFlag(command: Command): Command {
  return command.option("--json", 'print one JSON object: { "ok": true, "data": ... } or { "ok": false, "error": { code, message, fix } }');
}

/** The model flags of a command that starts runs (run, automations run, dev, start); `runs` says which. */
function modelFlags(command: Command, runs: string): Command {
  return command
    .option("--model <spec>", `the model ${runs} use: provider/model (e.g. openai/gpt-5.4-mini) or scripted:<file.json> (default: the config's model, else agent.ts's); checked before any run starts`)
    .option("--base-url <url>", "serve that model from an OpenAI- or Anthropic-compatible server")
    .option("--api <api>", "that server's wire API (needs --base-url; default: the catalog's, else openai-completions)");
}

/**
 * --agent, --state-dir, the model flags and --json of a command that continues a run (approve, deny, answer,
 * resume): a run keeps the model it started with, so --model can only name that one; --base-url and --api
 * say where it is served.
 */
function continuedFlags(command: Command): Command {
  storeOptions(command)
    .option("--model <spec>", "the run's own model, as a check: a run continues on the model it started with, so another model is refused")
    .option("--base-url <url>", "serve the run's model from this OpenAI- or Anthropic-compatible server (e.g. a local model the run started on)")
    .option("--api <api>", "that server's wire API (needs --base-url; default: the catalog's, else openai-completions)");
  return jsonFlag(command);
}

function storeOptions(command: Command): Command {
  return command.option("--agent <dir>", "the agent folder (default: the config's agent, else .)").option("--state-dir <dir>", "where runs are kept (default <agent>/.assembly-line/state)");
}

/** --agent, --state-dir and --json: what every command on existing runs takes. */
function storeFlags(command: Command): Command {
  return jsonFlag(storeOptions(command));
}

/** The option values by long flag name, and the positionals, as the command bodies read them. */
function parsedFrom(command: Command): ParsedCommand {
  const values: ParsedCommand["values"] = {};
  for (const option of command.options) {
    const value = command.getOptionValue(option.attributeName()) as ParsedCommand["values"][string];
    if (value !== undefined && option.long) values[option.long.replace(/^--/, "")] = value;
  }
  return { values, positionals: [...command.args] };
}

/** The config's base URL and API describe the config's model: a --model on the command line goes without them. */
const MODEL_SERVER_FLAGS = ["base-url", "api"];

async function applyConfig(parsed: ParsedCommand, spec: LeafSpec): Promise<void> {
  // On a command that continues a run, --model names the run's own model, not another one the config's server does not serve.
  const modelChosen = parsed.values.model !== undefined && spec.continuesRun !== true;
  const fill = Object.entries(spec.config ?? {}).filter(([flag]) => parsed.values[flag] === undefined && !(modelChosen && MODEL_SERVER_FLAGS.includes(flag)));
  const needsAgent = spec.agentPositional !== undefined && parsed.positionals[0] === undefined;
  if (fill.length === 0 && !needsAgent) return;
  const { loadProjectConfig } = await import("./config.js");
  const config = await loadProjectConfig();
  for (const [flag, key] of fill) {
    const value = config.values?.[key!];
    if (value === undefined) continue;
    parsed.values[flag] = String(value);
    (parsed.configured ??= []).push(flag);
  }
  if (spec.continuesRun && parsed.configured?.includes("model") !== true && config.values?.model !== undefined) parsed.configModel = String(config.values.model);
  if (needsAgent) {
    const agent = typeof config.values?.agent === "string" ? config.values.agent : ".";
    parsed.positionals[0] = spec.agentPositional === "artifact" ? join(agent, ".assembly-line") : agent;
  }
}

/**
 * Builds the whole command tree; `exit.code` receives the exit code of the command that ran.
 * `showText` takes what commander itself prints (help, the version): stdout by default.
 */
export function buildProgram(io: CommandIO, context: CommandContext, exit: { code: number }, showText: (text: string) => void = (text) => io.out(text.replace(/\n$/, ""))): Command {
  const help = pc.createColors(io.outColor === true);
  const program = new Command("assembly-line")
    .description("Build, run, inspect and ship durable agents.")
    .version(VERSION, "-v, --version", "print the version")
    .helpOption("-h, --help", "show help for the command")
    .helpCommand("help [command]", "show help for a command")
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: showText,
      writeErr: (text) => io.err(text.replace(/\n$/, "")),
      // main prints errors itself, as text or as the --json envelope.
      outputError: () => {},
      getOutHasColors: () => io.outColor === true,
      getErrHasColors: () => io.errColor === true,
    })
    .configureHelp({
      styleTitle: (text) => help.bold(text),
      styleCommandText: (text) => help.cyan(text),
      styleSubcommandText: (text) => help.cyan(text),
      styleOptionText: (text) => help.green(text),
      styleArgumentText: (text) => help.yellow(text),
      showGlobalOptions: false,
    });
  examples(program, [
    'assembly-line run ./agent -m "Remember to buy milk"',
    "assembly-line runs list --status waiting_approval",
    "assembly-line approve <runId> --agent ./agent",
    "assembly-line dev ./agent --port 3000",
    "assembly-line config show",
  ]);
  program.addHelpText(
    "after",
    "\nExit codes: 0 ok, 1 failed, 2 usage error, 3 run paused awaiting a decision, 4 run left unfinished (resume it).\nDefaults for --agent, --state-dir, --model, --base-url, --api and the host's --port/--host come from assembly-line.config.{ts,js,json} or package.json \"assembly-line\" (docs/cli.md).",
  );

  const leaf = (command: Command, spec: LeafSpec): Command =>
    command.action(async (...args: unknown[]) => {
      const self = args.at(-1) as Command;
      const parsed = parsedFrom(self);
      const swallowed = await flagTakenAsValue(self, rawArgsOf(self));
      if (swallowed) throw swallowed;
      const missing = (spec.required ?? []).filter((flag) => parsed.values[flag] === undefined);
      if (missing.length > 0) {
        const { AssemblyLineError } = await import("@assemblyline-agents/core");
        throw new AssemblyLineError("AL_ERR_CLI_USAGE", `missing ${missing.map((flag) => `--${flag}`).join(", ")}`, { fix: `See ${fullName(self)} --help.` });
      }
      await applyConfig(parsed, spec);
      const handler = await spec.load();
      exit.code = await handler(parsed, io, context);
    });
  // A group lets an option it does not know through: `runs --json` is told that it needs a command (in the envelope), not that --json is unknown.
  const group = (name: string, description: string): Command => program.command(name).description(description).allowUnknownOption();

  // --- agents ---
  leaf(
    examples(jsonFlag(program.command("build").description("compile an agent folder into .assembly-line/manifest.json").argument("[agentDir]", "the agent folder (default: the config's agent, else .)")), [
      "assembly-line build ./agent",
      "assembly-line build --json",
    ]),
    { load: async () => (await import("./commands/build.js")).buildCommand, agentPositional: "agent" },
  );

  leaf(
    examples(
      jsonFlag(
        modelFlags(
          program
            .command("run")
            .description("run one conversation turn and print its timeline")
            .argument("[agentDir]", "the agent folder (default: the config's agent, else .)")
            .option("-m, --message <text>", "the user message (required, not empty)"),
          "the run",
        )
          .option("--offline-script <file.json>", "use this scripted conversation when the model's API key is not set")
          .addOption(new Option("--approve <decision>", "decide approval pauses now instead of leaving the run paused").choices(["all", "none"]))
          .option("--answer <text>", "answer the first question the run asks (a later question pauses the run)")
          .option("--conversation <id>", "continue a conversation (history reaches the model)")
          .option("--state-dir <dir>", "where runs are kept (default <agentDir>/.assembly-line/state)")
          .option("--stream", "write the model's text to stderr as it arrives"),
      ),
      [
        'assembly-line run ./agent -m "Remember to buy milk"',
        'assembly-line run -m "hello" --model scripted:conversations/hello.json',
        'assembly-line run ./agent -m "hi" --model local/llama3 --base-url http://127.0.0.1:11434/v1 --stream',
        'assembly-line run ./agent -m "delete the draft" --approve none --json',
      ],
    ),
    { load: async () => (await import("./commands/run.js")).runCommand, config: { "state-dir": "stateDir", ...MODEL_FILL }, agentPositional: "agent", required: ["message"] },
  );

  const runs = group("runs", "list, inspect and migrate the agent's runs");
  examples(runs, ["assembly-line runs list --status waiting_approval", "assembly-line runs show <runId> --json"]);
  leaf(
    examples(
      storeFlags(runs.command("list").description("runs of the agent, newest first"))
        .addOption(new Option("--status <status>", "only runs in this status").choices(["queued", "running", "waiting_approval", "waiting_input", "completed", "failed"]))
        .option("--limit <n>", "runs per page (default 20)")
        .option("--cursor <cursor>", "the next page: the cursor the previous page printed"),
      ["assembly-line runs list", "assembly-line runs list --limit 10 --json", "assembly-line runs list --cursor <nextCursor> --json"],
    ),
    { load: async () => (await import("./commands/runs.js")).runsList, config: STORE_FILL },
  );
  leaf(examples(storeFlags(runs.command("show").description("a run's timeline, usage and what it waits for").argument("<runId>")), ["assembly-line runs show <runId>"]), {
    load: async () => (await import("./commands/runs.js")).runsShow,
    config: STORE_FILL,
  });
  leaf(
    examples(storeFlags(runs.command("migrate").description("move a paused run to the current build").argument("<runId>")).option("--to <revision>", "only: current (required)"), [
      "assembly-line runs migrate <runId> --to current",
    ]),
    { load: async () => (await import("./commands/runs.js")).runsMigrate, config: STORE_FILL },
  );

  leaf(
    examples(continuedFlags(program.command("approve").description("approve a paused tool call (or a budget extension) and resume the run").argument("<runId>").argument("[callId]", "the call to approve (default: the only pending one)")), [
      "assembly-line approve <runId>",
      "assembly-line approve <runId> <callId> --agent ./agent",
    ]),
    { load: async () => (await import("./commands/runs.js")).approveCommand, config: AGENT_FILL, continuesRun: true },
  );
  leaf(
    examples(continuedFlags(program.command("deny").description("deny it; the model receives a denial result").argument("<runId>").argument("[callId]")).option("--reason <text>", "why, as the model sees it"), [
      'assembly-line deny <runId> --reason "not today"',
    ]),
    { load: async () => (await import("./commands/runs.js")).denyCommand, config: AGENT_FILL, continuesRun: true },
  );
  leaf(
    examples(
      continuedFlags(program.command("answer").description("answer the run's question and resume it").argument("<runId>").argument("<text>")).option(
        "--call <callId>",
        "the question's call id: refused if the run asks another question by then",
      ),
      ['assembly-line answer <runId> "Tuesday"', 'assembly-line answer <runId> "Tuesday" --call <callId>'],
    ),
    {
      load: async () => (await import("./commands/runs.js")).answerCommand,
      config: AGENT_FILL,
      continuesRun: true,
    },
  );
  leaf(examples(continuedFlags(program.command("resume").description("continue a run left running by a process that died").argument("<runId>")), ["assembly-line resume <runId>"]), {
    load: async () => (await import("./commands/runs.js")).resumeCommand,
    config: AGENT_FILL,
    continuesRun: true,
  });

  leaf(
    examples(
      jsonFlag(
        program
          .command("test")
          .description("stop a scripted run after every durable write, resume it, report differences")
          .argument("[agentDir]", "the agent folder (default: the config's agent, else .)")
          .option("--conversation <file.json>", "the scripted model turns to play (required)")
          .option("--replay-stress", "the mode: stop and resume at every boundary (required)")
          .option("--message <text>", 'the user message (default "replay stress")'),
      ),
      ["assembly-line test ./agent --conversation conversations/hello.json --replay-stress"],
    ),
    { load: async () => (await import("./commands/test.js")).testCommand, agentPositional: "agent", required: ["conversation"] },
  );

  const automations = group("automations", "the agent's automations: schedule, next due time, paused");
  examples(automations, ["assembly-line automations list --agent ./agent", "assembly-line automations pause nightly-report"]);
  const automation = (name: string, description: string, withName: boolean, lines: string[]) => {
    // Only `run` starts a run, so only it takes the model flags.
    const command = storeFlags(automations.command(name).description(description));
    if (name === "run") modelFlags(command, "the automation's run");
    if (withName) command.argument("<name>", "the automation's name");
    leaf(examples(command, lines), { load: async () => (await import("./commands/automations.js")).automationsCommand(name), config: name === "run" ? AGENT_FILL : STORE_FILL });
  };
  automation("list", "every automation with its schedule and state", false, ["assembly-line automations list --agent ./agent"]);
  automation("run", "start one run of an automation now and print it", true, ["assembly-line automations run nightly-report"]);
  automation("pause", "stop an automation's schedule (survives restarts)", true, ["assembly-line automations pause nightly-report"]);
  automation("resume", "restart an automation's schedule", true, ["assembly-line automations resume nightly-report"]);

  const skills = group("skills", "the durable skill store: what changed since the seed, and undo it");
  examples(skills, ["assembly-line skills list", "assembly-line skills diff triage", "assembly-line skills list --subagent researcher"]);
  const skill = (name: string, description: string, withName: boolean, lines: string[]) => {
    const command = jsonFlag(
      skills
        .command(name)
        .description(description)
        .option("--agent <dir>", "the agent folder (default: the config's agent, else .)")
        .option("--state-dir <dir>", "where runs are kept")
        .option("--subagent <path>", "a subagent's skills instead of the agent's"),
    );
    if (withName) command.argument("<name>", "the skill's name");
    leaf(examples(command, lines), { load: async () => (await import("./commands/skills.js")).skillsCommand(name), config: { agent: "agent", "state-dir": "stateDir" } });
  };
  skill("list", "the skills and where each stands against its seed", false, ["assembly-line skills list"]);
  skill("show", "one skill's files", true, ["assembly-line skills show triage"]);
  skill("diff", "the seed in this build against what the store holds", true, ["assembly-line skills diff triage"]);
  skill("reset", "put a skill back to its seed (or remove one without a seed)", true, ["assembly-line skills reset triage"]);

  // --- hosting ---
  const serveFlags = (command: Command, defaultHost: string) =>
    jsonFlag(
      modelFlags(command, "the host's runs")
        .option("--port <n>", "the port (0 picks a free one; default: the config's host.port, else PORT, else gateway.ts's, else 3000)")
        .option("--host <addr>", `the address to listen on (default: the config's host.host, else HOST, else gateway.ts's, else ${defaultHost})`)
        .option("--state-dir <dir>", "where runs are kept")
        .option("--request-timeout-ms <ms>", "longest a request may take to arrive, headers and body: 408 after (default: ASSEMBLY_LINE_REQUEST_TIMEOUT_MS, else 30000)")
        .option("--headers-timeout-ms <ms>", "longest a request's headers may take to arrive, at most --request-timeout-ms (default: ASSEMBLY_LINE_HEADERS_TIMEOUT_MS, else 10000)")
        .option("--body-idle-timeout-ms <ms>", "longest pause inside a request body: 408 after (default: ASSEMBLY_LINE_BODY_IDLE_TIMEOUT_MS, else 10000)")
        .option("--max-connections <n>", "connections open at once; more are closed as they arrive (default: ASSEMBLY_LINE_MAX_CONNECTIONS, else 1024)"),
    );
  const SERVE_FILL: ConfigFill = { "state-dir": "stateDir", port: "host.port", host: "host.host", ...MODEL_FILL };
  leaf(
    examples(
      serveFlags(program.command("dev").description("serve the agent over HTTP in dev mode (local defaults, readable logs)").argument("[agentDir]", "the agent folder (default: the config's agent, else .)"), "127.0.0.1")
        .option("--offline-script <file.json>", "use this scripted conversation when the model's API key is not set")
        .option("--json-logs", "JSON log lines instead of readable ones"),
      ["assembly-line dev ./agent --port 3000", "assembly-line dev --offline-script conversations/hello.json"],
    ),
    { load: async () => (await import("./commands/serve.js")).dev, config: SERVE_FILL, agentPositional: "agent" },
  );
  leaf(
    examples(serveFlags(program.command("start").description("production boot of a built artifact (<agentDir>/.assembly-line)").argument("[artifactDir]", "the built artifact (default: <config agent>/.assembly-line, else ./.assembly-line)"), "0.0.0.0"), [
      "assembly-line start ./agent/.assembly-line --port 8080",
    ]),
    { load: async () => (await import("./commands/serve.js")).start, config: SERVE_FILL, agentPositional: "artifact" },
  );

  const collect = (value: string, previous: string[] = []) => [...previous, value];
  leaf(
    examples(
      jsonFlag(
        program
          .command("deploy")
          .description("build and ship the agent; secrets are passed from env, never written into the artifact")
          .argument("[agentDir]", "the agent folder (default: the config's agent, else .)")
          .addOption(new Option("--target <target>", "where to ship it (default: gateway.ts's deploy:, else required); local takes no other flag").choices(["local", "docker", "vps", "fly", "railway"]))
          .option("--name <name>", "docker, vps, fly, railway: the release name")
          .option("--model <spec>", "docker, vps, fly, railway: the model the release starts with (assembly-line start --model)")
          .option("--include <path>", "docker, vps, fly, railway: a file or folder to ship beside the agent (repeatable)", collect)
          .option("--port <n>", "docker, vps, fly, railway: the port the release listens on")
          .option("--ready-timeout <seconds>", "docker, vps: how long a new release has to answer /readyz (default 60)")
          .option("--base-image <image>", "docker, fly, railway: the base image")
          .option("--network <network>", "docker: bridge or host")
          .option("--host <host>", "vps: the ssh host")
          .option("--user <user>", "vps: the ssh user")
          .option("--ssh-port <n>", "vps: the ssh port")
          .option("--identity <keyfile>", "vps: the ssh private key")
          .option("--dir <dir>", "vps: the remote folder")
          .option("--node <path>", "vps: the remote node binary")
          .addOption(new Option("--service-manager <manager>", "vps: how the release is kept running").choices(["systemd", "process"]))
          .option("--out <dir>", "fly, railway: where to write the config, Dockerfile and bundle"),
      ),
      ["assembly-line deploy ./agent --target docker --port 8080", "assembly-line deploy ./agent --target vps --host 203.0.113.10 --user deploy --identity ~/.ssh/id_ed25519", "assembly-line deploy ./agent --target fly --out ./fly-release"],
    ),
    { load: async () => (await import("./commands/deploy.js")).deployCommand, agentPositional: "agent" },
  );

  // --- plugins ---
  const plugins = group("plugins", "the plugin marketplace: find, install and check adapter plugins");
  examples(plugins, ["assembly-line plugins search state", "assembly-line plugins add postgres", "assembly-line plugins verify ./my-plugin"]);
  plugins.addHelpText("after", "\nlist, search, info and add read the index named by --registry <url|file> or $ASSEMBLY_LINE_REGISTRY (a snapshot as `plugins list --json` prints it), else the one bundled with this version.");
  const registryFlag = (command: Command) => command.option("--registry <url|file>", "the registry index to read (default: $ASSEMBLY_LINE_REGISTRY, else the bundled one)");
  const pluginsLeaf = (command: Command, name: "listPlugins" | "searchPlugins" | "pluginInfo" | "addPlugin" | "verifyPlugin") =>
    leaf(command, { load: async () => (await import("./commands/plugins.js"))[name] });
  pluginsLeaf(examples(jsonFlag(registryFlag(plugins.command("list").description("every plugin in the registry: version, contracts, kernel range"))), ["assembly-line plugins list", "assembly-line plugins list --json > index.json"]), "listPlugins");
  pluginsLeaf(
    examples(jsonFlag(registryFlag(plugins.command("search").description("plugins whose id, description, tags or contracts match every word").argument("<words...>"))), ["assembly-line plugins search postgres state"]),
    "searchPlugins",
  );
  pluginsLeaf(examples(jsonFlag(registryFlag(plugins.command("info").description("one plugin: adapters, facets, env, and the gateway.ts lines to use it").argument("<id>"))), ["assembly-line plugins info postgres"]), "pluginInfo");
  pluginsLeaf(
    examples(
      jsonFlag(
        registryFlag(
          plugins
            .command("add")
            .description("npm install a plugin into the project and check it fits this kernel")
            .argument("<id|dir|tarball>", "a registry id, a package folder or a .tgz")
            .option("--dir <project>", "the project to install into (default: the working folder)")
            .option("--from <spec>", "install from this npm spec instead (a range or tag installs the release checked)")
            .option("--offline", "npm install --offline"),
        ),
      ),
      ["assembly-line plugins add postgres", "assembly-line plugins add ./my-plugin-0.1.0.tgz --dir ./app"],
    ),
    "addPlugin",
  );
  leaf(
    examples(
      jsonFlag(
        plugins
          .command("new")
          .description("scaffold a plugin package: manifest, adapter skeleton, conformance test")
          .argument("<package-name>")
          .option("--slot <slot>", "the slot the plugin provides (state, blob, sandbox, scheduler, deploy, channel, runtime, harness, telemetry-sink)")
          .option("--id <id>", "the plugin id (default: from the package name)")
          .option("--dir <folder>", "where to create it (default: the package name)")
          .option("--facets <list>", "--slot state: the facets it implements, comma separated (runs is required)"),
      ),
      ["assembly-line plugins new @acme/assembly-line-s3 --slot blob", "assembly-line plugins new acme-store --slot state --facets runs,conversations"],
    ),
    { load: async () => (await import("./commands/plugins-new.js")).pluginsNewCommand },
  );
  pluginsLeaf(
    examples(
      jsonFlag(plugins.command("verify").description("what to run before publishing a plugin: manifest, kernel range, exports, live contracts, conformance kits").argument("[dir]", "the plugin package (default: the working folder)").option("--options <json>", "the options gateway.ts would pass")),
      ["assembly-line plugins verify", "assembly-line plugins verify ./my-plugin --options '{\"file\":\"state.json\"}'"],
    ),
    "verifyPlugin",
  );

  // --- config ---
  const config = group("config", "the project config (assembly-line.config.{ts,js,json} or package.json \"assembly-line\")");
  examples(config, ["assembly-line config show"]);
  leaf(
    examples(
      jsonFlag(
        config
          .command("show")
          .description("the effective config and where each value came from (flag, config file, default)")
          .option("--model <spec>", "as a command would be given it")
          .option("--base-url <url>", "as a command would be given it")
          .option("--api <api>", "as a command would be given it")
          .option("--agent <dir>", "as a command would be given it")
          .option("--state-dir <dir>", "as a command would be given it")
          .option("--port <n>", "as dev/start would be given it (checked as they check it)")
          .option("--host <addr>", "as dev/start would be given it"),
      ),
      ["assembly-line config show", "assembly-line config show --model openai/gpt-5.4-mini --json"],
    ),
    { load: async () => (await import("./commands/config.js")).configShow },
  );

  return program;
}

/**
 * Runs one command line and returns its exit code. Errors (usage errors as
 * AL_ERR_CLI_USAGE) are thrown for the caller to print: `main` does.
 */
export async function runCommandLine(argv: string[], io: CommandIO, context: CommandContext = {}): Promise<number> {
  const exit = { code: 0 };
  // With --json, the help or version asked for is printed as the one envelope.
  const json = argv.includes("--json");
  let shown = "";
  const program = buildProgram(io, context, exit, json ? (text) => void (shown += text) : undefined);
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    // --help, --version and `help [command]` print what was asked and succeed.
    if (error.code === "commander.helpDisplayed" || error.code === "commander.version" || (error.code === "commander.help" && error.exitCode === 0)) {
      if (json) io.out(envelope(error.code === "commander.version" ? { version: VERSION } : { help: shown.replace(/\n$/, "") }));
      return 0;
    }
    // A flag that took the next flag as its value leaves commander counting the words after it wrong ("too many arguments"): that flag is what to fix.
    const swallowed = await flagTakenAsValue(commandNamed(program, argv), argv);
    if (swallowed) throw swallowed;
    const { AssemblyLineError } = await import("@assemblyline-agents/core");
    const misplaced = error.code === "commander.help" ? optionBeforeSubcommand(program, argv) : undefined;
    if (misplaced) throw new AssemblyLineError("AL_ERR_CLI_USAGE", misplaced.message, { fix: misplaced.fix });
    const words = argv.filter((word) => !word.startsWith("-"));
    // A group without its subcommand (or `help` of an unknown one) printed its help and stops as a usage error.
    const message =
      error.code !== "commander.help"
        ? error.message.replace(/^error: /, "")
        : words[0] === "help" && words[1] !== undefined
          ? `unknown command '${words.slice(1).join(" ")}'`
          : `${["assembly-line", ...words.slice(0, 1)].join(" ")} needs a command`;
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", message, { fix: `See assembly-line ${commandPath(program, argv)}--help.` });
  }
  return exit.code;
}

/**
 * A flag that takes a value takes the next word, even when that word is another of the
 * command's flags (`run -m --json`, `runs list --agent --json`): found in the words as
 * given, so that it is refused rather than read as the value. `--message=--json` still
 * gives a value that starts with "-".
 */
async function flagTakenAsValue(command: Command, words: string[]): Promise<Error | undefined> {
  const named = (word: string) => command.options.find((option) => option.long === word || option.short === word);
  for (let index = 0; index < words.length - 1; index++) {
    const word = words[index]!;
    if (word === "--") break;
    const option = named(word);
    const next = words[index + 1]!;
    if (option?.required && (next === "-h" || next === "--help" || named(next.split("=")[0]!) !== undefined)) {
      const { AssemblyLineError } = await import("@assemblyline-agents/core");
      const long = option.long ?? option.flags;
      return new AssemblyLineError("AL_ERR_CLI_USAGE", `option '${option.flags}' argument missing: ${next} is an option, not its value`, {
        fix: `Give ${long} a value (one that starts with "-" goes as ${long}=<value>). See ${fullName(command)} --help.`,
      });
    }
    // A value already taken is skipped: `-m -x` where -x is not a flag of this command stays a value.
    if (option?.required) index++;
  }
  return undefined;
}

/**
 * `runs --agent ./agent list`: a group takes no options of its own, so the subcommand's flag given
 * before it leaves the group without a command, although a later word names one. Said as what it
 * is, with the command line corrected: the options after the subcommand.
 */
function optionBeforeSubcommand(program: Command, argv: string[]): { message: string; fix: string } | undefined {
  const group = program.commands.find((command) => command.name() === argv[0]);
  if (!group || group.commands.length === 0) return undefined;
  const at = argv.findIndex((word, index) => index > 0 && group.commands.some((command) => command.name() === word));
  const option = argv.slice(1, at).find((word) => word.startsWith("-"));
  if (at < 0 || option === undefined) return undefined;
  const corrected = [argv[0]!, argv[at]!, ...argv.slice(1, at), ...argv.slice(at + 1)].map((word) => (/^[\w./:=@,+-]+$/.test(word) ? word : JSON.stringify(word)));
  return {
    message: `${option.split("=")[0]} is given before the command of assembly-line ${argv[0]}: its options go after the subcommand (${argv[at]})`,
    fix: `Run \`assembly-line ${corrected.join(" ")}\`.`,
  };
}

/** The words parse() was given; commander keeps them on the program without typing them. */
function rawArgsOf(command: Command): string[] {
  let root = command;
  while (root.parent) root = root.parent;
  return (root as Command & { rawArgs?: string[] }).rawArgs ?? [];
}

/** The (sub)command argv names, as far as its words name known commands. */
function commandNamed(program: Command, argv: string[]): Command {
  let current = program;
  for (const word of argv) {
    const next = current.commands.find((command) => command.name() === word);
    if (!next) break;
    current = next;
  }
  return current;
}

/** "assembly-line runs list" for the runs list command. */
function fullName(command: Command): string {
  return command.parent ? `${fullName(command.parent)} ${command.name()}` : command.name();
}

/** The words of argv that name known (sub)commands, for the --help hint of a usage error. */
function commandPath(program: Command, argv: string[]): string {
  let path = "";
  let current = program;
  for (const word of argv) {
    const next = current.commands.find((command) => command.name() === word);
    if (!next) break;
    path += `${word} `;
    current = next;
  }
  return path;
}
