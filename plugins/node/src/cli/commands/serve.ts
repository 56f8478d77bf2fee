import { AssemblyLineError, type RuntimeLogger } from "@assemblyline-agents/core";
import type { PiModelCatalog } from "@assemblyline-agents/pi";
import { buildAgent, createRuntimeLogger, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { checkSandboxAdapterInstalled } from "@assemblyline-agents/registry";
import { openLocalDefaults } from "../../host/local-defaults.js";
import { readableLogger } from "../../host/readable-logger.js";
import { listenNodeRuntime, type NodeRuntimeHandle } from "../../host/server.js";
import { installSignalHandlers } from "../../host/signals.js";
import { jsonOption, requirePositional, stringOption, type CommandContext, type ParsedCommand } from "../args.js";
import type { CommandIO } from "../io.js";
import { gatewayListenOptions, listenAddress } from "../listen-address.js";
import { parsePort } from "../port.js";
import { requestLimitOptions, type RequestLimits } from "../request-limits.js";
import { catalogFor, chooseModel, staticModelCheck, type ModelFlags } from "../local-runtime.js";
import { checkModelSpec, checkOfflineScript, modelFlagsOf } from "../model-flags.js";
import { stateDirOption } from "../state-dir.js";
import { envelope, progress } from "../output.js";

const DEV_USAGE = "assembly-line dev [agentDir] (assembly-line dev --help)";
const START_USAGE = "assembly-line start [artifactDir] (assembly-line start --help)";

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
export async function dev(parsed: ParsedCommand, io: CommandIO, context: CommandContext = {}): Promise<number> {
  const control = context.serve ?? {};
  const agentDir = requirePositional(parsed.positionals, 0, "agentDir", DEV_USAGE);
  // Everything the command line chose is checked before building, and the model before any server listens.
  const options = await serveOptions(parsed, DEV_USAGE);
  const offlineScript = stringOption(parsed, "offline-script");
  checkOfflineScript(offlineScript, parsed);
  progress(io, jsonOption(parsed))(`building ${agentDir}`);
  // agent.ts's model is the one served unless --model replaces it: the build checks it as `build` does.
  // --base-url (or the config's baseUrl) without --model serves it: its catalog entry is made from the model the build reads.
  const validateModel = options.flags.model === undefined ? { validateModel: async (spec: string) => staticModelCheck(await catalogFor(options.flags, spec))(spec) } : {};
  const { artifactRoot } = await buildAgent(agentDir, { ...validateModel, checkSandboxAdapter: checkSandboxAdapterInstalled });
  const bundle = await loadRuntimeBundle(artifactRoot);
  options.models ??= await catalogFor(options.flags, bundle.manifest.agent.model);
  const { model, note } = await chooseModel(bundle.manifest.agent.model, { ...options.flags, ...(offlineScript !== undefined ? { offlineScript } : {}) });
  const logger: RuntimeLogger = parsed.values["json-logs"] === true ? createRuntimeLogger() : readableLogger(io.err);
  return serve(bundle, parsed, io, control, { ...options, devMode: true, logger, model, note });
}

/**
 * `assembly-line start <artifactDir>`: production boot of a built artifact
 * (`<agentDir>/.assembly-line`) without rebuilding: JSON logs, auth required
 * for /runs and raw routes, channel secrets required.
 */
export async function start(parsed: ParsedCommand, io: CommandIO, context: CommandContext = {}): Promise<number> {
  const control = context.serve ?? {};
  const artifactDir = requirePositional(parsed.positionals, 0, "artifactDir", START_USAGE);
  const options = await serveOptions(parsed, START_USAGE);
  const bundle = await loadRuntimeBundle(artifactDir);
  const { flags } = options;
  options.models ??= await catalogFor(flags, bundle.manifest.agent.model);
  const model = flags.model ? (await chooseModel(bundle.manifest.agent.model, flags)).model : undefined;
  return serve(bundle, parsed, io, control, { ...options, devMode: false, logger: createRuntimeLogger(), model, note: `model ${flags.model ?? bundle.manifest.agent.model}${options.models ? ` at ${flags.baseUrl}` : ""}` });
}

/** What dev and start read from the command line, checked before anything is built, opened or listened on. */
interface ServeOptions {
  flags: ModelFlags;
  models: PiModelCatalog | undefined;
  listen: { port: number | undefined; host: string | undefined };
  /** --request-timeout-ms and the other slow-request bounds that were given. */
  requestLimits: RequestLimits;
  stateDir: string | undefined;
}

async function serveOptions(parsed: ParsedCommand, usage: string): Promise<ServeOptions> {
  const listen = { port: parsePort(stringOption(parsed, "port"), usage), host: hostOption(parsed, usage) };
  const requestLimits = requestLimitOptions(parsed, usage);
  const stateDir = stateDirOption(parsed, { mustExist: false, usage });
  const flags = modelFlagsOf(parsed);
  // Without --model, agent.ts's model is the one --base-url serves: dev and start make its entry once they have read the build.
  const models = await catalogFor(flags, undefined);
  if (flags.model !== undefined) await checkModelSpec(flags.model, models);
  return { flags, models, listen, requestLimits, stateDir };
}

async function serve(
  bundle: RuntimeBundle,
  parsed: ParsedCommand,
  io: CommandIO,
  control: ServeControl,
  mode: ServeOptions & { devMode: boolean; logger: RuntimeLogger; model: string | undefined; note: string },
): Promise<number> {
  const { stateDir, models } = mode;
  const local = await openLocalDefaults(bundle, { ...(stateDir ? { stateDir } : {}), ...(models ? { models } : {}), devMode: mode.devMode });
  let handle: NodeRuntimeHandle;
  try {
    const fromGateway = await gatewayListenOptions(bundle, local.kernel, { agentDir: local.agentDir, devMode: mode.devMode, env: process.env });
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
      ...listenAddress(mode.listen, process.env, fromGateway),
      ...mode.requestLimits,
      ...(mode.model ? { model: mode.model } : {}),
    });
  } catch (error) {
    await local.state.close?.();
    await local.close();
    throw error;
  }
  void handle.closed.then(() => local.close());
  const { manifest } = bundle;
  if (jsonOption(parsed)) {
    const channels = manifest.channels.map((channel) => ({ name: channel.name, methods: channel.methods, url: `${handle.url}${channel.route}` }));
    // `model` is the spec new runs use; `modelNote` says why (a --model, the offline script, the key being set).
    io.out(envelope({ agentId: manifest.agent.id, agentRevision: manifest.agentRevision, url: handle.url, devMode: mode.devMode, model: mode.model ?? manifest.agent.model, modelNote: mode.note, channels }));
  } else printRoutes(bundle, handle, mode, local.scheduler !== undefined, io);
  if (control.installSignals !== false) installSignalHandlers(handle);
  control.onListening?.(handle);
  await handle.closed;
  // The drain's own promise (shutdown() is idempotent): exit code 1 when a step of it failed, as documented.
  return handle.shutdown().then(
    () => 0,
    () => 1,
  );
}

function printRoutes(bundle: RuntimeBundle, handle: NodeRuntimeHandle, mode: { devMode: boolean; note: string }, scheduler: boolean, io: CommandIO): void {
  const { manifest } = bundle;
  io.out(`${manifest.agent.id} ${manifest.agentRevision}, ${mode.note}${mode.devMode ? " (dev mode)" : ""}`);
  io.out(`listening on ${handle.url}`);
  for (const channel of manifest.channels) io.out(`  ${channel.methods.join("|").padEnd(6)} ${handle.url}${channel.route}  (channel ${channel.name})`);
  io.out(`  GET    ${handle.url}/runs  /runs/:id  POST /runs/:id/approve|deny|answer`);
  io.out(`  run inspector: ${handle.url}/inspector${mode.devMode ? "" : "  (needs the host's auth)"}`);
  io.out(`  GET    ${handle.url}/healthz  /readyz  /admin/kill-switch`);
  if (scheduler) io.out(`  scheduler: ${manifest.automations?.length ?? 0} static automation(s)${manifest.agent.dynamicAutomations?.dynamic ? ", dynamic automations on" : ""}`);
}

function hostOption(parsed: ParsedCommand, usage: string): string | undefined {
  const host = stringOption(parsed, "host");
  if (host !== undefined && host.trim() === "") throw new AssemblyLineError("AL_ERR_CLI_USAGE", "--host is empty", { fix: `Give the address to listen on (e.g. --host 127.0.0.1), or leave --host out. usage: ${usage}` });
  return host;
}

/** `assembly-line dev <args>` for embedding (tests, scripts): the same parsing and checks as the command line. */
export async function devCommand(args: string[], io: CommandIO, control: ServeControl = {}): Promise<number> {
  const { runCommandLine } = await import("../program.js");
  return runCommandLine(["dev", ...args], io, { serve: control });
}

/** `assembly-line start <args>` for embedding. */
export async function startCommand(args: string[], io: CommandIO, control: ServeControl = {}): Promise<number> {
  const { runCommandLine } = await import("../program.js");
  return runCommandLine(["start", ...args], io, { serve: control });
}
