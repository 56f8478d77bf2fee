import { AssemblyLineError, checkSnapshotPolicy, MAX_TIMER_MS, isTimerDelay, type SandboxSnapshotPolicy } from "@assemblyline-agents/core";

/** What `dockerSandbox({...})` accepts: plain data, so it can sit in gateway.ts or sandbox.ts. */
export interface DockerSandboxOptions {
  /** The image each run's container starts from (it must have a POSIX shell). */
  image: string;
  /** "none" (no network at all), "bridge", "host" or a user-defined network name. Default "none". */
  network?: "none" | "bridge" | "host" | (string & {});
  /** CPU limit in cores, e.g. 0.5. */
  cpus?: number;
  /** Memory limit: bytes, or "512m", "2g". Swap is not granted beyond it. */
  memory?: number | string;
  /** Most processes (and threads) a container may run. Default 256. */
  pidsLimit?: number;
  /** User commands run as (`uid`, `uid:gid` or a name the image knows). Default: the image's. */
  user?: string;
  /** Variables every command sees. The host's environment never reaches the container. */
  env?: Record<string, string>;
  /** Default exec timeout. Default 60 s. */
  defaultTimeoutMs?: number;
  /** Default cap on each of stdout and stderr. Default 64 KiB. */
  maxOutputBytes?: number;
  /** Separates the containers of agents sharing an engine. Default: derived from the agent folder. */
  scope?: string;
  /** Opt-in snapshots: commit the container to an image, restore from the latest; a release removes the key's snapshots. */
  snapshot?: SandboxSnapshotPolicy;
  /** The engine's socket. Default: $DOCKER_HOST, else /var/run/docker.sock. */
  socketPath?: string;
  /** How long the engine has to answer a control call (inspect, create, start, exec, remove); a snapshot's commit gets ten times it. Default 60 s. */
  engineTimeoutMs?: number;
  /** Accepted for sandbox.ts parity; only /workspace is valid. */
  workingDirectory?: "/workspace";
}

export interface ResolvedSandboxOptions {
  image: string;
  network: string;
  nanoCpus: number | undefined;
  memoryBytes: number | undefined;
  pidsLimit: number;
  user: string | undefined;
  env: Record<string, string>;
  defaultTimeoutMs: number;
  maxOutputBytes: number;
  scope: string;
  snapshot: Required<Pick<SandboxSnapshotPolicy, "mode" | "retainLast">> & { reason: string | undefined } | undefined;
  socketPath: string | undefined;
  engineTimeoutMs: number;
}

const UNITS: Record<string, number> = { b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
const KNOWN = new Set(["image", "network", "cpus", "memory", "pidsLimit", "user", "env", "defaultTimeoutMs", "maxOutputBytes", "scope", "snapshot", "socketPath", "engineTimeoutMs", "workingDirectory", "adapter"]);

export function badOption(name: string, value: unknown, expected: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `dockerSandbox option ${name} is ${JSON.stringify(value)}, not ${expected}`, {
    fix: `Set ${name} to ${expected}, or omit it.`,
    details: { option: name },
  });
}

export function parseMemory(value: number | string): number {
  if (typeof value === "number") {
    if (!Number.isInteger(value) || value < 6 * 1024 * 1024) throw badOption("memory", value, "a byte count of at least 6 MiB (the engine's minimum)");
    return value;
  }
  const match = /^(\d+(?:\.\d+)?)\s*([bkmg])?b?$/i.exec(String(value).trim());
  if (!match) throw badOption("memory", value, 'a size such as "512m" or "2g"');
  return parseMemory(Math.floor(Number(match[1]) * UNITS[(match[2] ?? "b").toLowerCase()]!));
}

/** Check every option once, at construction, so a typo fails the boot instead of the first run. */
export function resolveSandboxOptions(options: DockerSandboxOptions, defaultScope: string): ResolvedSandboxOptions {
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw badOption(key, (options as unknown as Record<string, unknown>)[key], "a known option (image, network, cpus, memory, pidsLimit, user, env, defaultTimeoutMs, maxOutputBytes, scope, snapshot, socketPath, engineTimeoutMs)");
  }
  if (typeof options.image !== "string" || options.image.trim() === "") throw badOption("image", options.image, 'an image reference such as "node:22-slim"');
  if (options.workingDirectory !== undefined && options.workingDirectory !== "/workspace") throw badOption("workingDirectory", options.workingDirectory, '"/workspace" (commands see a physical /workspace)');
  const network = options.network ?? "none";
  if (typeof network !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(network)) throw badOption("network", network, '"none", "bridge", "host" or a network name');
  if (options.cpus !== undefined && (typeof options.cpus !== "number" || !(options.cpus > 0) || options.cpus > 1024)) throw badOption("cpus", options.cpus, "a positive number of cores such as 0.5");
  const pidsLimit = options.pidsLimit ?? 256;
  if (!Number.isInteger(pidsLimit) || pidsLimit < 8) throw badOption("pidsLimit", pidsLimit, "a whole number of at least 8");
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
  if (!isTimerDelay(defaultTimeoutMs)) throw badOption("defaultTimeoutMs", defaultTimeoutMs, `a positive number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`);
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
  if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 0) throw badOption("maxOutputBytes", maxOutputBytes, "a non-negative whole number of bytes");
  const engineTimeoutMs = options.engineTimeoutMs ?? 60_000;
  if (!isTimerDelay(engineTimeoutMs)) throw badOption("engineTimeoutMs", engineTimeoutMs, `a positive number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`);
  for (const name of ["user", "socketPath", "scope"] as const) {
    const value: unknown = options[name];
    if (value !== undefined && (typeof value !== "string" || value === "")) throw badOption(name, value, "a non-empty string");
  }
  const scope = (options.scope ?? defaultScope).toLowerCase();
  if (!/^[a-z0-9][a-z0-9_.-]{0,40}$/.test(scope)) throw badOption("scope", options.scope, "lowercase letters, digits, '.', '_' or '-' (at most 41)");
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || typeof value !== "string") throw badOption(`env.${name}`, value, "a string under a variable name");
    // Else the engine refuses the container at a run's first command, not at boot.
    if (value.includes("\0")) throw badOption(`env.${name}`, value, "a string without a NUL byte (no process environment can carry one; pass binary data in a file)");
  }
  let snapshot: ResolvedSandboxOptions["snapshot"];
  if (options.snapshot !== undefined) {
    const checked = checkSnapshotPolicy(options.snapshot);
    if ("problem" in checked) throw badOption(checked.problem.option, checked.problem.value, checked.problem.expected);
    snapshot = checked.policy;
  }
  return {
    image: options.image,
    network,
    nanoCpus: options.cpus === undefined ? undefined : Math.round(options.cpus * 1e9),
    memoryBytes: options.memory === undefined ? undefined : parseMemory(options.memory),
    pidsLimit,
    user: options.user,
    env: { ...options.env },
    defaultTimeoutMs,
    maxOutputBytes,
    scope,
    snapshot,
    socketPath: options.socketPath,
    engineTimeoutMs,
  };
}
