import "../registry-kernel.js";
import { existsSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { AssemblyLineError, adapterDescriptor, defineGateway, isAssemblyLineError, type DeployTarget } from "@assemblyline-agents/core";
import { checkIncludes, deployEnv } from "@assemblyline-agents/core/deploy";
import { checkSandboxAdapterInstalled, composeGateway, gatewayEnvNames } from "@assemblyline-agents/registry";
import { SCRIPTED_PREFIX, buildAgent, loadModelScript, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { PlatformDeployTarget, PLATFORMS, type Platform } from "../../deploy/platform-deploy-target.js";
import { VpsDeployTarget, type VpsDeployOptions } from "../../deploy/vps-deploy-target.js";
import { jsonOption, requirePositional, stringOption, type ParsedCommand } from "../args.js";
import type { CommandIO } from "../io.js";
import { staticModelCheck } from "../local-runtime.js";
import { checkModelSpec } from "../model-flags.js";
import { servedByBuiltInRoute } from "../../host/model-routes.js";
import { loadPi } from "../../pi-engine.js";
import { envelope, progress } from "../output.js";

export const DEPLOY_TARGETS = ["local", "docker", "vps", "fly", "railway"] as const;
export type DeployTargetName = (typeof DEPLOY_TARGETS)[number];

const USAGE = `assembly-line deploy <agentDir> [--target ${DEPLOY_TARGETS.join("|")}] [--json]
    without --target: the deploy target gateway.ts chooses (deploy: dockerDeploy(), localDeploy(), or an installed plugin's)
    local:   no other flags (copies the built revision to <agentDir>/.assembly-line-deployments/<revision>; starts nothing)
    docker, vps, fly, railway: [--name <name>] [--model <spec>] [--include <path>]... [--port <n>]
    docker, vps:  [--ready-timeout <seconds>]
    docker, fly, railway: [--base-image <image>]
    docker:  [--network bridge|host]
    vps:     --host <host> [--user <user>] [--ssh-port <n>] [--identity <keyfile>] [--dir <remote dir>] [--node <remote node path>] [--service-manager systemd|process]
    fly, railway: [--out <dir>] (writes the config, Dockerfile and bundle; runs the platform CLI when it is installed)`;

/** The targets that start a release (local only copies the revision). */
const RELEASE_TARGETS = ["docker", "vps", "fly", "railway"] as const satisfies readonly DeployTargetName[];

/**
 * Each target-specific option of deployAgent, the flags that set it, and the
 * targets that honour it. Any other target refuses it rather than drop it.
 * Exhaustive: a new option does not compile until it is listed here.
 */
const TARGET_OPTIONS = {
  name: { flags: ["--name"], targets: RELEASE_TARGETS },
  model: { flags: ["--model"], targets: RELEASE_TARGETS },
  include: { flags: ["--include"], targets: RELEASE_TARGETS },
  port: { flags: ["--port"], targets: RELEASE_TARGETS },
  readyTimeoutMs: { flags: ["--ready-timeout"], targets: ["docker", "vps"] },
  baseImage: { flags: ["--base-image"], targets: ["docker", "fly", "railway"] },
  network: { flags: ["--network"], targets: ["docker"] },
  vps: { flags: ["--host", "--user", "--ssh-port", "--identity", "--dir", "--node", "--service-manager"], targets: ["vps"] },
  out: { flags: ["--out"], targets: ["fly", "railway"] },
} as const satisfies Record<TargetOption, { flags: readonly string[]; targets: readonly DeployTargetName[] }>;
type TargetOption = Exclude<keyof DeployAgentOptions, "agentDir" | "target" | "env" | "onProgress">;

/** The vps option each vps flag sets. */
const VPS_FLAGS = {
  "--host": "host",
  "--user": "user",
  "--ssh-port": "sshPort",
  "--identity": "identityFile",
  "--dir": "directory",
  "--node": "nodePath",
  "--service-manager": "serviceManager",
} as const satisfies Record<(typeof TARGET_OPTIONS.vps.flags)[number], keyof VpsDeployOptions>;

/** The text options (and the flags that set them) whose empty value is refused: most often a shell variable that was not set. */
const TEXT_OPTIONS = [
  ["name", "--name"],
  ["baseImage", "--base-image"],
  ["network", "--network"],
  ["out", "--out"],
] as const satisfies ReadonlyArray<readonly [TargetOption, string]>;

/** Why a target refuses an option, said with the refusal. */
const TARGET_NOTES: Partial<Record<DeployTargetName, string>> = {
  local: "--target local copies the built revision into a deployments folder beside the agent and starts nothing, so it takes no release flags (its folder comes from gateway.ts's localDeploy({ directory }))",
};

/** What a refusal says: the flag, the option it sets, who takes it, and how to fix the command. */
interface IgnoredOption {
  flag: string;
  option: TargetOption;
  /** "only --target docker|vps do" */
  takers: string;
  fix: string;
}

/** Throw `refuse(...)` for the first option (or flag) the chosen target would not honour. */
function refuseIgnoredOptions(target: DeployTargetName | undefined, given: (option: TargetOption, flag: string) => boolean, refuse: (ignored: IgnoredOption) => AssemblyLineError): void {
  for (const [option, spec] of Object.entries(TARGET_OPTIONS) as Array<[TargetOption, { flags: readonly string[]; targets: readonly DeployTargetName[] }]>) {
    // undefined: a plugin's target, which takes its options from gateway.ts alone.
    if (target !== undefined && spec.targets.includes(target)) continue;
    const targets = `--target ${spec.targets.join("|")}`;
    for (const flag of spec.flags) {
      if (!given(option, flag)) continue;
      const note = target === undefined ? "a deploy plugin chosen by gateway.ts takes its options from gateway.ts's deploy: entry" : TARGET_NOTES[target];
      throw refuse({ flag, option, takers: `only ${targets} ${spec.targets.length === 1 ? "does" : "do"}`, fix: `Leave ${flag} out, or deploy with ${targets}.${note ? ` ${note}.` : ""}` });
    }
  }
}

export interface DeployAgentOptions {
  agentDir: string;
  /** Left out: the target gateway.ts's deploy slot chooses (a built-in one, or an installed plugin's, with gateway.ts's options). */
  target?: DeployTargetName;
  name?: string;
  /** A model spec the release is started with (`assembly-line start --model`), e.g. a scripted conversation inside the bundle. */
  model?: string;
  include?: string[];
  port?: number;
  /** How long a new release has to answer /readyz (docker, vps). Default 60 s. */
  readyTimeoutMs?: number;
  /** docker */
  baseImage?: string;
  network?: string;
  /** vps */
  vps?: Omit<VpsDeployOptions, "name" | "port" | "startArgs" | "include">;
  /** fly, railway */
  out?: string;
  /** Where the release's secrets come from. Default: process.env. */
  env?: Record<string, string | undefined>;
  /** Told each stage as it starts (building, shipping). */
  onProgress?: (step: string) => void;
}

export interface DeployOutcome {
  /** A built-in target, or the plugin id of the one gateway.ts chose. */
  target: string;
  id: string;
  url?: string;
  /** Variables the release was given (names only; values never leave env). */
  envNames: string[];
  /** What else the target reports (replaced releases, commands to run, ...). */
  details: Record<string, unknown>;
}

/**
 * Build the agent, pick the variables the release needs (the gateway plugins'
 * declared env, channel secrets, ASSEMBLY_LINE_*) from env, and hand both to
 * the target. Secrets travel as process environment only, never in the artifact.
 */
export async function deployAgent(options: DeployAgentOptions): Promise<DeployOutcome> {
  checkBlankOptions(options);
  if (options.target !== undefined) checkTargetOptions(options, options.target);
  const agentDir = resolve(options.agentDir);
  if (options.model !== undefined) await checkReleaseModel(options.model, agentDir);
  if (options.include !== undefined) checkIncludes(agentDir, options.include);
  options.onProgress?.(`building ${agentDir}`);
  const { artifactRoot } = await buildAgent(agentDir, { validateModel: staticModelCheck(undefined), checkSandboxAdapter: checkSandboxAdapterInstalled });
  const bundle = await loadRuntimeBundle(artifactRoot);
  const fromGateway = bundle.sourceBundle.gateway?.deploy;
  const targetName = options.target ?? fromGateway?.plugin;
  if (targetName === undefined) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", "missing --target: gateway.ts chooses no deploy target", {
      fix: `Pass --target ${DEPLOY_TARGETS.join("|")}, or set deploy: in gateway.ts (e.g. deploy: dockerDeploy()).\nusage: ${USAGE}`,
    });
  }
  // Chosen by gateway.ts: its plugin's options apply, and a target flag would be one it never reads.
  if (options.target === undefined) checkTargetOptions(options, targetName);
  const names = new Set(await gatewayEnvNames({ gateway: bundle.sourceBundle.gateway, sandbox: bundle.manifest.sandbox, agentDir }));
  for (const channel of bundle.manifest.channels) for (const group of channel.requiredSecretEnv) for (const name of group) names.add(name);
  const modelKey = await modelKeyVariable(options.model ?? bundle.manifest.agent.model);
  if (modelKey) names.add(modelKey);
  const env = deployEnv(options.env ?? process.env, { names });
  const startArgs = options.model ? ["--model", options.model] : [];
  const target = await chooseTarget(options, targetName, agentDir, fromGateway, startArgs);
  try {
    options.onProgress?.(`deploying to ${targetName}`);
    const result = (await target.deploy({ artifactRoot, env })) as { id: string; url?: string } & Record<string, unknown>;
    const { id, url, ...details } = result;
    return { target: targetName, id, ...(url ? { url } : {}), envNames: Object.keys(env).sort(), details };
  } finally {
    await (target as { close?(): Promise<void> }).close?.();
  }
}

/**
 * The model a release starts with (`--model`), checked before anything is built: a release that
 * cannot start its model would be deployed all the same. A provider/model must be one the engine
 * knows; a scripted conversation a file inside the agent folder (the bundle carries it, with
 * --include when the build does not), read where the release starts, beside its agent.
 */
async function checkReleaseModel(model: string, agentDir: string): Promise<void> {
  if (model.trim() === "") throw new AssemblyLineError("AL_ERR_CLI_USAGE", "--model is empty", { fix: "Give the model the release starts with, or leave --model out for agent.ts's." });
  if (!model.startsWith(SCRIPTED_PREFIX)) return checkModelSpec(model, undefined);
  const file = model.slice(SCRIPTED_PREFIX.length);
  const path = resolve(agentDir, file);
  if (isAbsolute(file) || relative(agentDir, path).startsWith("..") || !existsSync(path)) {
    throw new AssemblyLineError("AL_ERR_SCRIPTED_MODEL", `--model ${model}: the release reads ${file} inside its agent folder, and ${agentDir} has no such file`, {
      fix: "Name a scripted conversation by its path inside the agent folder, e.g. scripted:conversations/hello.json, and --include it when the build does not list it.",
    });
  }
  loadModelScript(path);
}

/**
 * The variable the Pi engine reads the release's model provider key from
 * (`OPENAI_API_KEY` for openai/...): without it a release cannot call its model.
 * Subagents share the root's provider. None for scripted models, the Codex
 * route (its session lives in CODEX_HOME on this machine) and providers whose
 * credentials are no one variable (Bedrock's AWS profile).
 */
async function modelKeyVariable(modelSpec: string): Promise<string | undefined> {
  if (modelSpec.startsWith("scripted:") || servedByBuiltInRoute(modelSpec)) return undefined;
  const pi = await loadPi().catch((error: unknown) => {
    if (isAssemblyLineError(error, "AL_ERR_HARNESS")) return undefined;
    throw error;
  });
  const variable = pi?.apiKeyVariable(modelSpec.split("/")[0]!);
  return variable !== undefined && /^[A-Z_][A-Z0-9_]*$/.test(variable) ? variable : undefined;
}

/**
 * An empty text option is refused, not replaced by its default: `--name "$RELEASE"` with RELEASE
 * unset would otherwise ship over the release named after the agent.
 */
function checkBlankOptions(options: DeployAgentOptions): void {
  const refuse = (option: string, flag: string): never => {
    throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `deploy option ${option} (${flag}) is empty`, { fix: `Give ${flag} a value, or leave it out for its default.`, details: { option } });
  };
  for (const [option, flag] of TEXT_OPTIONS) {
    const value = options[option];
    if (value !== undefined && value.trim() === "") refuse(option, flag);
  }
  for (const [flag, key] of Object.entries(VPS_FLAGS)) {
    const value = options.vps?.[key];
    if (typeof value === "string" && value.trim() === "") refuse(`vps.${key}`, flag);
  }
}

/**
 * A built-in target takes the options it honours (the others are refused); a plugin target gateway.ts
 * chose takes gateway.ts's options only, so every target flag is refused for it.
 */
function checkTargetOptions(options: DeployAgentOptions, target: string): void {
  const builtIn = (DEPLOY_TARGETS as readonly string[]).includes(target);
  refuseIgnoredOptions(
    builtIn ? (target as DeployTargetName) : undefined,
    (option, flag) => (option === "vps" ? vpsFlagGiven(options.vps, flag) : options[option] !== undefined),
    ({ flag, option, takers, fix }) =>
      new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `deploy target ${target} does not take option ${option} (${flag}): ${takers}`, { fix, details: { target, option } }),
  );
}

/** Whether `vps` sets what `flag` does; vps options none of its flags sets count as --host. */
function vpsFlagGiven(vps: DeployAgentOptions["vps"], flag: string): boolean {
  if (vps === undefined) return false;
  const set = Object.entries(VPS_FLAGS).filter(([, key]) => vps[key] !== undefined).map(([given]) => given);
  return set.length === 0 ? flag === "--host" : set.includes(flag);
}

async function chooseTarget(
  options: DeployAgentOptions,
  targetName: string,
  agentDir: string,
  fromGateway: { plugin: string; options: unknown } | undefined,
  startArgs: string[],
): Promise<DeployTarget & { close?(): Promise<void> }> {
  if (!(DEPLOY_TARGETS as readonly string[]).includes(targetName)) {
    if (fromGateway?.plugin !== targetName) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `unknown deploy target ${JSON.stringify(targetName)}`, { fix: `Use --target ${DEPLOY_TARGETS.join("|")}, or leave --target out to use gateway.ts's deploy: plugin.` });
    }
    return materialize(targetName, fromGateway.options as Record<string, unknown>, agentDir);
  }
  switch (targetName as DeployTargetName) {
    case "vps":
      return new VpsDeployTarget({
        ...(options.vps as VpsDeployOptions),
        ...optional("name", options.name),
        ...optional("port", options.port),
        ...optional("include", options.include),
        ...optional("readyTimeoutMs", options.readyTimeoutMs),
        startArgs,
      });
    case "fly":
    case "railway":
      return new PlatformDeployTarget({
        platform: targetName as Platform,
        ...optional("name", options.name),
        ...optional("port", options.port),
        ...optional("include", options.include),
        ...optional("out", options.out),
        ...optional("baseImage", options.baseImage),
        startArgs,
      });
    case "local":
    case "docker": {
      // Plugin targets are materialized through the installed plugin, like gateway.ts's deploy slot.
      const gatewayOptions = fromGateway?.plugin === targetName ? (fromGateway.options as Record<string, unknown>) : {};
      const overrides: Record<string, unknown> =
        targetName === "docker"
          ? {
              ...optional("name", options.name),
              ...optional("port", options.port),
              ...optional("baseImage", options.baseImage),
              ...optional("network", options.network),
              ...optional("include", options.include),
              ...optional("readyTimeoutMs", options.readyTimeoutMs),
              ...(startArgs.length > 0 ? { startArgs } : {}),
            }
          : {};
      return materialize(targetName, { ...gatewayOptions, ...overrides }, agentDir);
    }
  }
}

/** A deploy target through its installed plugin, as gateway.ts's deploy slot is materialized. */
async function materialize(plugin: string, options: Record<string, unknown>, agentDir: string): Promise<DeployTarget & { close?(): Promise<void> }> {
  const composed = await composeGateway({ gateway: defineGateway({ deploy: adapterDescriptor("deploy", plugin, options) }), agentDir, devMode: true });
  const target = composed.adapters.deploy as DeployTarget;
  return Object.assign(Object.create(target) as DeployTarget, { deploy: target.deploy.bind(target), close: () => composed.close() });
}

/** `assembly-line deploy <agentDir> --target ...` */
export async function deployCommand(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const json = jsonOption(parsed);
  const agentDir = requirePositional(parsed.positionals, 0, "agentDir", USAGE);
  const target = stringOption(parsed, "target");
  if (target !== undefined && !DEPLOY_TARGETS.includes(target as DeployTargetName)) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `unknown --target ${target}`, { fix: `Use --target ${DEPLOY_TARGETS.join("|")}, or leave --target out to deploy where gateway.ts's deploy: says.\nusage: ${USAGE}` });
  }
  if (target !== undefined) {
    refuseIgnoredOptions(
      target as DeployTargetName,
      (_option, flag) => parsed.values[flag.slice(2)] !== undefined,
      ({ flag, takers, fix }) => new AssemblyLineError("AL_ERR_CLI_USAGE", `--target ${target} does not take ${flag}: ${takers}`, { fix: `${fix}\nusage: ${USAGE}`, details: { target, flag } }),
    );
  }
  // An empty value is refused, not dropped for the default: most often a shell variable that was not set.
  for (const flag of ["--name", "--model", "--base-image", "--network", "--out", ...TARGET_OPTIONS.vps.flags]) {
    const value = stringOption(parsed, flag.slice(2));
    if (value !== undefined && value.trim() === "") throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${flag} is empty`, { fix: `Give ${flag} a value, or leave it out.\nusage: ${USAGE}`, details: { flag } });
  }
  const includes = parsed.values.include as unknown as string[] | undefined;
  if (includes?.some((path) => path.trim() === "")) throw new AssemblyLineError("AL_ERR_CLI_USAGE", "--include is empty", { fix: `Name a file or folder inside the agent folder.\nusage: ${USAGE}`, details: { flag: "--include" } });
  const port = numberOption(stringOption(parsed, "port"), "--port");
  const sshPort = numberOption(stringOption(parsed, "ssh-port"), "--ssh-port");
  const host = stringOption(parsed, "host");
  const readyText = stringOption(parsed, "ready-timeout");
  const readySeconds = readyText === undefined ? undefined : Number(readyText);
  if (readySeconds !== undefined && !(Number.isInteger(readySeconds) && readySeconds > 0)) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--ready-timeout ${readyText} is not a whole number of seconds`, { fix: `usage: ${USAGE}` });
  }
  const manager = stringOption(parsed, "service-manager");
  if (manager !== undefined && manager !== "systemd" && manager !== "process") {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--service-manager ${manager} is not systemd or process`, { fix: `usage: ${USAGE}` });
  }
  const outcome = await deployAgent({
    agentDir,
    onProgress: progress(io, json),
    ...(target !== undefined ? { target: target as DeployTargetName } : {}),
    ...optional("name", stringOption(parsed, "name")),
    ...optional("model", stringOption(parsed, "model")),
    ...optional("include", includes),
    ...optional("port", port),
    ...optional("readyTimeoutMs", readySeconds === undefined ? undefined : readySeconds * 1000),
    ...optional("baseImage", stringOption(parsed, "base-image")),
    ...optional("network", stringOption(parsed, "network")),
    ...optional("out", stringOption(parsed, "out")),
    // Collected whenever given, so a target gateway.ts chooses refuses them rather than drop them.
    ...(target === "vps" || TARGET_OPTIONS.vps.flags.some((flag) => parsed.values[flag.slice(2)] !== undefined)
      ? {
          vps: {
            ...(target === "vps" ? { host: host ?? "" } : (optional("host", host) as { host: string })),
            ...optional("user", stringOption(parsed, "user")),
            ...optional("sshPort", sshPort),
            ...optional("identityFile", stringOption(parsed, "identity")),
            ...optional("directory", stringOption(parsed, "dir")),
            ...optional("nodePath", stringOption(parsed, "node")),
            ...optional("serviceManager", manager as "systemd" | "process" | undefined),
          },
        }
      : {}),
  });
  if (json) {
    io.out(envelope(outcome));
    return 0;
  }
  io.out(`deployed ${outcome.id} to ${outcome.target}${outcome.url ? ` at ${outcome.url}` : ""}`);
  io.out(`environment passed: ${outcome.envNames.join(", ") || "(none)"}`);
  const commands = outcome.details.commands as string[] | undefined;
  if (commands?.length) {
    io.out(outcome.details.ran ? "ran:" : "the platform CLI is not installed; run:");
    for (const command of commands) io.out(`  ${command}`);
  }
  return 0;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function numberOption(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 65_535) throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${flag} ${text} is not a port number`, { fix: `usage: ${USAGE}` });
  return value;
}

export { PLATFORMS };
