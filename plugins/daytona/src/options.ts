import { AssemblyLineError, checkSnapshotPolicy, MAX_TIMER_MS, type SandboxSnapshotPolicy } from "@assemblyline-agents/core";

/** What `daytonaSandbox({...})` accepts: plain data, so it can sit in gateway.ts or sandbox.ts. No keys: those come from the environment. */
export interface DaytonaSandboxOptions {
  /** An image each run's sandbox is built from (Daytona builds it declaratively). Default: Daytona's default snapshot. */
  image?: string;
  /** A Daytona snapshot (a prebuilt image registered with Daytona) to start from instead of `image`. */
  baseSnapshot?: string;
  /** "none" blocks all network access (Daytona's networkBlockAll); "bridge" keeps Daytona's default egress. Default "none". */
  network?: "none" | "bridge";
  /** Resources: CPU cores, memory and disk in GiB (Daytona's units). Only with `image`: a sandbox made from a snapshot has the snapshot's. */
  cpus?: number;
  memoryGiB?: number;
  diskGiB?: number;
  /** Variables every command sees. The host's environment never reaches the sandbox. */
  env?: Record<string, string>;
  /** Default exec timeout. Default 60 s. */
  defaultTimeoutMs?: number;
  /** Default cap on each of stdout and stderr. Default 64 KiB. */
  maxOutputBytes?: number;
  /** Separates the sandboxes of agents sharing an organization (names, labels). Default: derived from the agent folder. */
  scope?: string;
  /** Minutes of inactivity before Daytona stops the sandbox (its files survive; the next acquire starts it). Default Daytona's (15); 0 never. */
  autoStopMinutes?: number;
  /** How long creating (and building) a sandbox may take. Default 120 s. */
  createTimeoutMs?: number;
  /** How long any other call to the Daytona API may go unanswered (a command gets its own timeout on top). Default 60 s. */
  requestTimeoutMs?: number;
  /** The Daytona API. Default: $DAYTONA_API_URL, else Daytona's cloud. */
  apiUrl?: string;
  /** The Daytona region. Default: $DAYTONA_TARGET, else the organization's default. */
  target?: string;
  /** Opt-in snapshots: the sandbox saved as a Daytona snapshot, restored from the latest. */
  snapshot?: SandboxSnapshotPolicy;
  /** Accepted for sandbox.ts parity; only /workspace is valid. */
  workingDirectory?: "/workspace";
}

export interface ResolvedDaytonaOptions {
  image: string | undefined;
  baseSnapshot: string | undefined;
  networkBlockAll: boolean;
  cpus: number | undefined;
  memoryGiB: number | undefined;
  diskGiB: number | undefined;
  env: Record<string, string>;
  defaultTimeoutMs: number;
  maxOutputBytes: number;
  scope: string;
  autoStopMinutes: number | undefined;
  createTimeoutMs: number;
  requestTimeoutMs: number;
  apiUrl: string | undefined;
  target: string | undefined;
  snapshot: Required<Pick<SandboxSnapshotPolicy, "mode" | "retainLast">> & { reason: string | undefined } | undefined;
}

const KNOWN = ["image", "baseSnapshot", "network", "cpus", "memoryGiB", "diskGiB", "env", "defaultTimeoutMs", "maxOutputBytes", "scope", "autoStopMinutes", "createTimeoutMs", "requestTimeoutMs", "apiUrl", "target", "snapshot", "workingDirectory", "adapter"];

export function badOption(name: string, value: unknown, expected: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `daytonaSandbox option ${name} is ${JSON.stringify(value)}, not ${expected}`, {
    fix: `Set ${name} to ${expected}, or omit it.`,
    details: { option: name },
  });
}

function positiveNumber(options: Record<string, unknown>, name: string, integer = false): number | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value) || (integer && !Number.isInteger(value))) throw badOption(name, value, integer ? "a positive whole number" : "a positive number");
  // A longer delay would fire at once: every call would time out as it starts.
  if (name.endsWith("TimeoutMs") && value > MAX_TIMER_MS) throw badOption(name, value, `a positive number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`);
  return value;
}

/** Check every option once, at construction, so a typo fails the boot instead of the first run. */
export function resolveDaytonaOptions(options: DaytonaSandboxOptions, defaultScope: string): ResolvedDaytonaOptions {
  const record = options as unknown as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key === "apiKey") {
      throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", "daytonaSandbox option apiKey is not accepted: options end up in build artifacts", {
        fix: "Remove apiKey and set DAYTONA_API_KEY in the host's environment.",
        details: { option: key },
      });
    }
    if (!KNOWN.includes(key)) throw badOption(key, record[key], `a known option (${KNOWN.filter((name) => name !== "adapter").join(", ")})`);
  }
  let snapshot: ResolvedDaytonaOptions["snapshot"];
  if (options.snapshot !== undefined) {
    const checked = checkSnapshotPolicy(options.snapshot);
    if ("problem" in checked) throw badOption(checked.problem.option, checked.problem.value, checked.problem.expected);
    snapshot = checked.policy;
  }
  for (const name of ["image", "baseSnapshot", "apiUrl", "target"] as const) {
    if (options[name] !== undefined && (typeof options[name] !== "string" || options[name].trim() === "")) throw badOption(name, options[name], "a non-empty string");
  }
  if (options.image !== undefined && options.baseSnapshot !== undefined) throw badOption("baseSnapshot", options.baseSnapshot, "set together with image (choose one)");
  // Daytona takes resources only for a sandbox built from an image; one made from a snapshot gets the snapshot's.
  const resources = (["cpus", "memoryGiB", "diskGiB"] as const).filter((name) => options[name] !== undefined);
  if (resources.length > 0 && options.image === undefined) {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `daytonaSandbox option ${resources.join(", ")} needs image: ${options.baseSnapshot === undefined ? "without image Daytona starts the sandbox from its default snapshot" : `baseSnapshot ${JSON.stringify(options.baseSnapshot)} is used instead of an image`}, and a sandbox made from a snapshot has the snapshot's resources, so ${resources.length > 1 ? "they" : "it"} would be ignored`, {
      fix: `Set image (Daytona then builds the sandbox with these resources), or remove ${resources.join(", ")} and give the snapshot the resources it needs in Daytona.`,
      details: { option: resources[0], options: resources },
    });
  }
  if (options.workingDirectory !== undefined && options.workingDirectory !== "/workspace") throw badOption("workingDirectory", options.workingDirectory, '"/workspace" (commands see a physical /workspace)');
  const network = options.network ?? "none";
  if (network !== "none" && network !== "bridge") throw badOption("network", network, '"none" or "bridge"');
  const defaultTimeoutMs = positiveNumber(record, "defaultTimeoutMs") ?? 60_000;
  const createTimeoutMs = positiveNumber(record, "createTimeoutMs") ?? 120_000;
  // The SDK's own default is a day: a Daytona API that stops answering would hold the run that long.
  const requestTimeoutMs = positiveNumber(record, "requestTimeoutMs") ?? 60_000;
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
  if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 0) throw badOption("maxOutputBytes", maxOutputBytes, "a non-negative whole number of bytes");
  const autoStopMinutes = options.autoStopMinutes;
  if (autoStopMinutes !== undefined && (!Number.isInteger(autoStopMinutes) || autoStopMinutes < 0)) throw badOption("autoStopMinutes", autoStopMinutes, "a whole number of minutes (0: never)");
  const givenScope: unknown = options.scope ?? defaultScope;
  // A scope that is no string (a number from a config file) fails the check below instead of throwing a TypeError here.
  const scope = typeof givenScope === "string" ? givenScope.toLowerCase() : "";
  if (!/^[a-z0-9][a-z0-9_.-]{0,40}$/.test(scope)) throw badOption("scope", options.scope, "lowercase letters, digits, '.', '_' or '-' (at most 41)");
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || typeof value !== "string") throw badOption(`env.${name}`, value, "a string under a variable name");
  }
  return {
    image: options.image,
    baseSnapshot: options.baseSnapshot,
    networkBlockAll: network === "none",
    cpus: positiveNumber(record, "cpus", true),
    memoryGiB: positiveNumber(record, "memoryGiB", true),
    diskGiB: positiveNumber(record, "diskGiB", true),
    env: { ...options.env },
    defaultTimeoutMs,
    maxOutputBytes,
    scope,
    autoStopMinutes,
    createTimeoutMs,
    requestTimeoutMs,
    apiUrl: options.apiUrl,
    target: options.target,
    snapshot,
  };
}
