import { AssemblyLineError, type RuntimeLogger } from "@assemblyline-agents/core";
import { buildAgent, createRuntimeLogger, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { checkSandboxAdapterInstalled } from "@assemblyline-agents/registry";
import { openLocalDefaults } from "../../host/local-defaults.js";
import { readableLogger } from "../../host/readable-logger.js";
import { listenNodeRuntime, type NodeRuntimeHandle } from "../../host/server.js";
import { installSignalHandlers } from "../../host/signals.js";
import { parseCommand, requirePositional, stringOption, type ParsedCommand } from "../args.js";
import type { CommandIO } from "../io.js";
import { MODEL_OPTIONS, catalogFor, chooseModel } from "../local-runtime.js";

const DEV_USAGE =
  "assembly-line dev <agentDir> [--port <n>] [--host <addr>] [--model <spec>] [--base-url <url>] [--api <api>] [--offline-script <file.json>] [--state-dir <dir>] [--json-logs]";
const START_USAGE = "assembly-line start <artifactDir> [--port <n>] [--host <addr>] [--model <spec>] [--base-url <url>] [--api <api>] [--state-dir <dir>]";

const SERVE_OPTIONS = {
  port: { type: "string" },
  host: { type: "string" },
  "state-dir": { type: "string" },
  ...MODEL_OPTIONS,
} as const;

/** For embedding the commands (tests): see the handle, and keep process signals alone. */
export interface ServeControl {
  onListening?(handle: NodeRuntimeHandle): void;
  /** Install SIGTERM/SIGINT handlers that exit the process after the drain. Default true. */
  installSignals?: boolean;
}

/**
 * `assembly-line dev <agentDir>`: build the agent and serve it in dev mode on
 * 127.0.0.1 with local state, readable logs, open raw routes and /runs (unless
 * ASSEMBLY_LINE_BEARER_TOKEN is set). Runs until SIGTERM/SIGINT.
 */
export async function devCommand(args: string[], io: CommandIO, control: ServeControl = {}): Promise<number> {
  const parsed = parseCommand(args, { ...SERVE_OPTIONS, "offline-script": { type: "string" }, "json-logs": { type: "boolean" } }, DEV_USAGE);
  const agentDir = requirePositional(parsed.positionals, 0, "agentDir", DEV_USAGE);
  const { artifactRoot } = await buildAgent(agentDir, { checkSandboxAdapter: checkSandboxAdapterInstalled });
  const bundle = await loadRuntimeBundle(artifactRoot);
  const flags = modelFlags(parsed);
  const { model, note } = await chooseModel(bundle.manifest.agent.model, { ...flags, offlineScript: stringOption(parsed, "offline-script") });
  const logger: RuntimeLogger = parsed.values["json-logs"] === true ? createRuntimeLogger() : readableLogger(io.err);
  return serve(bundle, parsed, io, control, { devMode: true, usage: DEV_USAGE, logger, model, note });
}

/**
 * `assembly-line start <artifactDir>`: production boot of a built artifact
 * (`<agentDir>/.assembly-line`) without rebuilding: JSON logs, auth required
 * for /runs and raw routes, channel secrets required.
 */
export async function startCommand(args: string[], io: CommandIO, control: ServeControl = {}): Promise<number> {
  const parsed = parseCommand(args, SERVE_OPTIONS, START_USAGE);
  const artifactDir = requirePositional(parsed.positionals, 0, "artifactDir", START_USAGE);
  const bundle = await loadRuntimeBundle(artifactDir);
  const flags = modelFlags(parsed);
  const model = flags.model ? (await chooseModel(bundle.manifest.agent.model, flags)).model : undefined;
  return serve(bundle, parsed, io, control, { devMode: false, usage: START_USAGE, logger: createRuntimeLogger(), model, note: `model ${flags.model ?? bundle.manifest.agent.model}` });
}

async function serve(
  bundle: RuntimeBundle,
  parsed: ParsedCommand,
  io: CommandIO,
  control: ServeControl,
  mode: { devMode: boolean; usage: string; logger: RuntimeLogger; model: string | undefined; note: string },
): Promise<number> {
  const port = portOption(parsed, mode.usage);
  const host = stringOption(parsed, "host");
  const stateDir = stringOption(parsed, "state-dir");
  const models = await catalogFor(modelFlags(parsed));
  const local = await openLocalDefaults(bundle, { ...(stateDir ? { stateDir } : {}), ...(models ? { models } : {}), devMode: mode.devMode });
  let handle: NodeRuntimeHandle;
  try {
    handle = await listenNodeRuntime({
      ...bundle,
      state: local.state,
      blob: local.blob,
      sandbox: local.sandbox,
      ...(local.scheduler ? { scheduler: local.scheduler } : {}),
      ...(local.connections ? { connections: local.connections } : {}),
      defaultHarness: local.defaultHarness,
      ...(local.kernel ? { kernel: local.kernel } : {}),
      devMode: mode.devMode,
      logger: mode.logger,
      ...(port !== undefined ? { port } : {}),
      ...(host ? { host } : {}),
      ...(mode.model ? { model: mode.model } : {}),
    });
  } catch (error) {
    await local.state.close?.();
    await local.close();
    throw error;
  }
  void handle.closed.then(() => local.close());
  const { manifest } = bundle;
  io.out(`${manifest.agent.id} ${manifest.agentRevision}, ${mode.note}${mode.devMode ? " (dev mode)" : ""}`);
  io.out(`listening on ${handle.url}`);
  for (const channel of manifest.channels) io.out(`  ${channel.methods.join("|").padEnd(6)} ${handle.url}${channel.route}  (channel ${channel.name})`);
  io.out(`  GET    ${handle.url}/runs  /runs/:id  POST /runs/:id/approve|deny|answer`);
  io.out(`  run inspector: ${handle.url}/inspector${mode.devMode ? "" : "  (needs the host's auth)"}`);
  io.out(`  GET    ${handle.url}/healthz  /readyz  /admin/kill-switch`);
  if (local.scheduler) io.out(`  scheduler: ${manifest.automations?.length ?? 0} static automation(s)${manifest.agent.dynamicAutomations?.dynamic ? ", dynamic automations on" : ""}`);
  if (control.installSignals !== false) installSignalHandlers(handle);
  control.onListening?.(handle);
  await handle.closed;
  return 0;
}

function modelFlags(parsed: ParsedCommand) {
  return { model: stringOption(parsed, "model"), baseUrl: stringOption(parsed, "base-url"), api: stringOption(parsed, "api") };
}

function portOption(parsed: ParsedCommand, usage: string): number | undefined {
  const text = stringOption(parsed, "port");
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--port ${text} is not a port number (0-65535)`, { fix: `usage: ${usage}` });
  }
  return port;
}
