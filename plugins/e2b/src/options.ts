import { AssemblyLineError, checkSnapshotPolicy, MAX_TIMER_MS, isTimerDelay, type SandboxSnapshotPolicy } from "@assemblyline-agents/core";

/** What `e2bSandbox({...})` accepts: plain data, so it can sit in gateway.ts or sandbox.ts. No keys: those come from the environment. */
export interface E2bSandboxOptions {
  /** The E2B template (id or alias) each run's sandbox starts from. Default: E2B's "base". */
  template?: string;
  /** "none" turns internet access off (allowInternetAccess: false); "bridge" keeps it. Default "none". */
  network?: "none" | "bridge";
  /** Variables every command sees. The host's environment never reaches the sandbox. */
  env?: Record<string, string>;
  /** Default exec timeout. Default 60 s. */
  defaultTimeoutMs?: number;
  /** Default cap on each of stdout and stderr. Default 64 KiB. */
  maxOutputBytes?: number;
  /** Separates the sandboxes of agents sharing a team (metadata). Default: derived from the agent folder. */
  scope?: string;
  /** How long a sandbox lives after each acquire before E2B acts on it (onTimeout). At most 24 h (E2B's Pro plan; 1 h on Hobby). Default 1 h. */
  lifetimeMs?: number;
  /** What E2B does at the end of the lifetime: "pause" keeps the files for the next acquire; "kill" deletes them. Default "pause". */
  onTimeout?: "pause" | "kill";
  /** The E2B API. Default: $E2B_API_URL, else derived from the domain. */
  apiUrl?: string;
  /** The E2B domain. Default: $E2B_DOMAIN, else e2b.app. */
  domain?: string;
  /** One URL for every sandbox's envd (routed by the E2b-Sandbox-Id header). Default: $E2B_SANDBOX_URL, else per sandbox. */
  sandboxUrl?: string;
  /** E2B starts sandboxes from templates, not images: any value is refused (set template). */
  image?: string;
  /** Opt-in snapshots: the sandbox saved as an E2B snapshot, restored from the latest. */
  snapshot?: SandboxSnapshotPolicy;
  /** Accepted for sandbox.ts parity; only /workspace is valid. */
  workingDirectory?: "/workspace";
}

export interface ResolvedE2bOptions {
  template: string | undefined;
  allowInternetAccess: boolean;
  env: Record<string, string>;
  defaultTimeoutMs: number;
  maxOutputBytes: number;
  scope: string;
  lifetimeMs: number;
  onTimeout: "pause" | "kill";
  apiUrl: string | undefined;
  domain: string | undefined;
  sandboxUrl: string | undefined;
  snapshot: Required<Pick<SandboxSnapshotPolicy, "mode" | "retainLast">> & { reason: string | undefined } | undefined;
}

const KNOWN = ["template", "network", "env", "defaultTimeoutMs", "maxOutputBytes", "scope", "lifetimeMs", "onTimeout", "apiUrl", "domain", "sandboxUrl", "image", "snapshot", "workingDirectory", "adapter"];

/** E2B's longest sandbox timeout, on its Pro plan. */
export const MAX_LIFETIME_MS = 24 * 60 * 60_000;

export function badOption(name: string, value: unknown, expected: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `e2bSandbox option ${name} is ${JSON.stringify(value)}, not ${expected}`, {
    fix: `Set ${name} to ${expected}, or omit it.`,
    details: { option: name },
  });
}

function unsupported(option: string, why: string, fix: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `e2bSandbox option ${option} is not supported: ${why}`, { fix, details: { option } });
}

/** Check every option once, at construction, so a typo fails the boot instead of the first run. */
export function resolveE2bOptions(options: E2bSandboxOptions, defaultScope: string): ResolvedE2bOptions {
  const record = options as unknown as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key === "apiKey") throw unsupported("apiKey", "options end up in build artifacts", "Remove apiKey and set E2B_API_KEY in the host's environment.");
    if (!KNOWN.includes(key)) throw badOption(key, record[key], `a known option (${KNOWN.filter((name) => name !== "adapter").join(", ")})`);
  }
  let snapshot: ResolvedE2bOptions["snapshot"];
  if (options.snapshot !== undefined) {
    const checked = checkSnapshotPolicy(options.snapshot);
    if ("problem" in checked) throw badOption(checked.problem.option, checked.problem.value, checked.problem.expected);
    snapshot = checked.policy;
  }
  if (options.image !== undefined) {
    throw unsupported("image", "E2B starts sandboxes from templates, not images", "Build a template from the image (E2B's template build) and set template to its name.");
  }
  for (const name of ["template", "apiUrl", "domain", "sandboxUrl"] as const) {
    if (options[name] !== undefined && (typeof options[name] !== "string" || options[name].trim() === "")) throw badOption(name, options[name], "a non-empty string");
  }
  if (options.workingDirectory !== undefined && options.workingDirectory !== "/workspace") throw badOption("workingDirectory", options.workingDirectory, '"/workspace" (commands see a physical /workspace)');
  const network = options.network ?? "none";
  if (network !== "none" && network !== "bridge") throw badOption("network", network, '"none" or "bridge"');
  const onTimeout = options.onTimeout ?? "pause";
  if (onTimeout !== "pause" && onTimeout !== "kill") throw badOption("onTimeout", onTimeout, '"pause" or "kill"');
  const positive = (name: "defaultTimeoutMs" | "lifetimeMs", fallback: number) => {
    const value = options[name] ?? fallback;
    if (!isTimerDelay(value)) throw badOption(name, value, `a positive number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`);
    return value;
  };
  const lifetimeMs = positive("lifetimeMs", 60 * 60_000);
  // E2B refuses a longer sandbox timeout on every plan (Hobby's limit, 1 h, it reports itself: the API does not say a key's plan).
  if (lifetimeMs > MAX_LIFETIME_MS) throw badOption("lifetimeMs", lifetimeMs, "at most 24 h (86400000 ms), the longest sandbox timeout E2B allows (on Pro; 1 h on Hobby)");
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
    template: options.template,
    allowInternetAccess: network === "bridge",
    env: { ...options.env },
    defaultTimeoutMs: positive("defaultTimeoutMs", 60_000),
    maxOutputBytes,
    scope,
    lifetimeMs,
    onTimeout,
    apiUrl: options.apiUrl,
    domain: options.domain,
    sandboxUrl: options.sandboxUrl,
    snapshot,
  };
}
