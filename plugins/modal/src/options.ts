import { AssemblyLineError, MAX_TIMER_MS } from "@assemblyline-agents/core";

/** What `modalSandbox({...})` accepts: plain data, so it can sit in gateway.ts or sandbox.ts. No tokens: those come from the environment. */
export interface ModalSandboxOptions {
  /** The registry image each run's sandbox starts from (Modal builds `FROM <image>`). Default "debian:bookworm-slim". */
  image?: string;
  /** The Modal App the sandboxes belong to (created when missing). Default "assembly-line". */
  app?: string;
  /** The Modal environment. Default: $MODAL_ENVIRONMENT, else the workspace's default. */
  environment?: string;
  /** "none" blocks all networking (blockNetwork); "bridge" keeps Modal's default egress. Default "none". */
  network?: "none" | "bridge";
  /** CPU cores requested (Modal's `cpu`). Default: Modal's. */
  cpu?: number;
  /** Memory requested in MiB (Modal's `memoryMiB`). Default: Modal's. */
  memoryMiB?: number;
  /** Variables every command sees. The host's environment never reaches the sandbox. */
  env?: Record<string, string>;
  /** Default exec timeout. Default 60 s. */
  defaultTimeoutMs?: number;
  /** Default cap on each of stdout and stderr. Default 64 KiB. */
  maxOutputBytes?: number;
  /** Separates the sandboxes of agents sharing an App (sandbox names and tags). Default: derived from the agent folder. */
  scope?: string;
  /** How long a sandbox lives before Modal terminates it (its files with it). Whole seconds, at most 24 h. Default 1 h. */
  lifetimeMs?: number;
  /** Idle time after which Modal terminates the sandbox. Whole seconds. Default: none. */
  idleTimeoutMs?: number;
  /** How long any call to Modal may go unanswered (creating a sandbox builds its image, a command gets its own timeout). Default 60 s. */
  requestTimeoutMs?: number;
  /** Modal's API. Default: $MODAL_SERVER_URL, else Modal's own. */
  serverUrl?: string;
  /** Not supported: this adapter keeps no snapshots (Modal's filesystem snapshots are not wired in); any value is refused. */
  snapshot?: unknown;
  /** Accepted for sandbox.ts parity; only /workspace is valid. */
  workingDirectory?: "/workspace";
}

export interface ResolvedModalOptions {
  image: string;
  app: string;
  environment: string | undefined;
  blockNetwork: boolean;
  cpu: number | undefined;
  memoryMiB: number | undefined;
  env: Record<string, string>;
  defaultTimeoutMs: number;
  maxOutputBytes: number;
  scope: string;
  lifetimeMs: number;
  idleTimeoutMs: number | undefined;
  requestTimeoutMs: number;
  serverUrl: string | undefined;
}

const KNOWN = ["image", "app", "environment", "network", "cpu", "memoryMiB", "env", "defaultTimeoutMs", "maxOutputBytes", "scope", "lifetimeMs", "idleTimeoutMs", "requestTimeoutMs", "serverUrl", "snapshot", "workingDirectory", "adapter"];
const DAY_MS = 24 * 60 * 60_000;

export function badOption(name: string, value: unknown, expected: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `modalSandbox option ${name} is ${JSON.stringify(value)}, not ${expected}`, {
    fix: `Set ${name} to ${expected}, or omit it.`,
    details: { option: name },
  });
}

function unsupported(option: string, why: string, fix: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `modalSandbox option ${option} is not supported: ${why}`, { fix, details: { option } });
}

/** Check every option once, at construction, so a typo fails the boot instead of the first run. */
export function resolveModalOptions(options: ModalSandboxOptions, defaultScope: string): ResolvedModalOptions {
  const record = options as unknown as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key === "tokenId" || key === "tokenSecret" || key === "apiKey") {
      throw unsupported(key, "options end up in build artifacts", "Remove it and set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET in the host's environment.");
    }
    if (!KNOWN.includes(key)) throw badOption(key, record[key], `a known option (${KNOWN.filter((name) => name !== "adapter").join(", ")})`);
  }
  if (options.snapshot !== undefined) {
    throw unsupported("snapshot", "the Modal adapter keeps no snapshots", "Remove snapshot; a Modal sandbox lives for its lifetimeMs and is terminated at the run's end.");
  }
  for (const name of ["image", "app", "environment", "serverUrl"] as const) {
    if (options[name] !== undefined && (typeof options[name] !== "string" || options[name].trim() === "")) throw badOption(name, options[name], "a non-empty string");
  }
  // Modal's object-name rule, checked here so a bad App name fails where it is written.
  if (options.app !== undefined && !/^[A-Za-z0-9._-]{1,63}$/.test(options.app)) throw badOption("app", options.app, "letters, digits, '.', '_' or '-' (at most 63)");
  if (options.workingDirectory !== undefined && options.workingDirectory !== "/workspace") throw badOption("workingDirectory", options.workingDirectory, '"/workspace" (commands see a physical /workspace)');
  const network = options.network ?? "none";
  if (network !== "none" && network !== "bridge") throw badOption("network", network, '"none" or "bridge"');
  const positive = (name: "defaultTimeoutMs" | "requestTimeoutMs" | "cpu" | "memoryMiB", fallback?: number) => {
    const value = options[name] ?? fallback;
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isFinite(value) || !(value > 0)) throw badOption(name, value, "a positive number");
    // A longer delay would fire at once: every call would time out as it starts.
    if (name.endsWith("TimeoutMs") && value > MAX_TIMER_MS) throw badOption(name, value, `a positive number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`);
    return value;
  };
  // Modal takes sandbox lifetimes in whole seconds.
  const seconds = (name: "lifetimeMs" | "idleTimeoutMs", fallback?: number) => {
    const value = options[name] ?? fallback;
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value <= 0 || value % 1000 !== 0 || value > DAY_MS) throw badOption(name, value, "a whole number of seconds in milliseconds, at most 24 h");
    return value;
  };
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
  if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 0) throw badOption("maxOutputBytes", maxOutputBytes, "a non-negative whole number of bytes");
  const givenScope: unknown = options.scope ?? defaultScope;
  // A scope that is no string (a number from a config file) fails the check below instead of throwing a TypeError here.
  const scope = typeof givenScope === "string" ? givenScope.toLowerCase() : "";
  if (!/^[a-z0-9][a-z0-9_.-]{0,40}$/.test(scope)) throw badOption("scope", options.scope, "lowercase letters, digits, '.', '_' or '-' (at most 41)");
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || typeof value !== "string") throw badOption(`env.${name}`, value, "a string under a variable name");
  }
  return {
    image: options.image ?? "debian:bookworm-slim",
    app: options.app ?? "assembly-line",
    environment: options.environment,
    blockNetwork: network === "none",
    cpu: positive("cpu"),
    memoryMiB: positive("memoryMiB"),
    env: { ...options.env },
    defaultTimeoutMs: positive("defaultTimeoutMs", 60_000)!,
    maxOutputBytes,
    scope,
    lifetimeMs: seconds("lifetimeMs", 60 * 60_000)!,
    idleTimeoutMs: seconds("idleTimeoutMs"),
    // The SDK sets no deadline of its own: a Modal server that stops answering would hold the run forever.
    requestTimeoutMs: positive("requestTimeoutMs", 60_000)!,
    serverUrl: options.serverUrl,
  };
}
