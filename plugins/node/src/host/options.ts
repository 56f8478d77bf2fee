import { AssemblyLineError, MAX_TIMER_MS, checkRateLimitRequest, type Scheduler, type TelemetrySink } from "@assemblyline-agents/core";
import type { RuntimeOptions } from "@assemblyline-agents/runtime";
import type { AttachmentOptions } from "./attachments.js";
import { clientAddressOf, trustProxySetting, type ClientAddressOf } from "./client-address.js";
import { DEFAULT_BODY_IDLE_TIMEOUT_MS } from "./http.js";
import type { HostAuthOptions } from "./auth.js";
import type { OutboxOptions } from "./outbox.js";
import { RATE_LIMIT_BUCKETS, type BucketLimit, type RateLimitOptions } from "./rate-limit.js";

/**
 * What `listenNodeRuntime` takes: the runtime's options plus the host's. The host
 * decides `owesDelivery` itself, from its channel modules.
 */
export interface NodeRuntimeOptions extends Omit<RuntimeOptions, "owesDelivery" | "owesFailureDelivery"> {
  /**
   * Development mode: raw channel routes and `/runs` work without auth, and a
   * channel's missing `requiredSecretEnv` is a warning. Default false (production).
   */
  devMode?: boolean;
  /** TCP port; 0 picks a free one. Default: env PORT, else 3000. */
  port?: number;
  /** Interface to bind. Default: env HOST, else 127.0.0.1 in devMode and 0.0.0.0 in production. */
  host?: string;
  /** Bearer token and/or an auth policy for `/runs`, `/admin`, probes and raw channel routes. */
  auth?: HostAuthOptions;
  /** Ingress token buckets; off by default, and `false` disables even ASSEMBLY_LINE_RATE_LIMIT. */
  rateLimit?: false | RateLimitOptions;
  /** Bound on waiting for in-flight runs at shutdown, 0 to 2147483647 ms (env ASSEMBLY_LINE_SHUTDOWN_TIMEOUT_MS, default 30 000). */
  shutdownTimeoutMs?: number;
  /** Largest request body accepted; larger ones get 413. Default 1 MiB. */
  maxBodyBytes?: number;
  /**
   * Longest a request may take to arrive, headers and body, counted from its first byte; a request
   * still arriving then is answered 408 and its connection closed. The answer may take longer (`?wait=`).
   * Default: env ASSEMBLY_LINE_REQUEST_TIMEOUT_MS, else 30 000.
   */
  requestTimeoutMs?: number;
  /**
   * Longest a request's headers may take to arrive (408, closed); at most `requestTimeoutMs`.
   * Default: env ASSEMBLY_LINE_HEADERS_TIMEOUT_MS, else 10 000, or `requestTimeoutMs` when that is less.
   */
  headersTimeoutMs?: number;
  /** Longest pause between two pieces of a request body while the host reads it (408, closed). Default: env ASSEMBLY_LINE_BODY_IDLE_TIMEOUT_MS, else 10 000. */
  bodyIdleTimeoutMs?: number;
  /** Connections open at once; one more is closed as it arrives. Default: env ASSEMBLY_LINE_MAX_CONNECTIONS, else 1024. */
  maxConnections?: number;
  /**
   * The reverse proxies in front of the host, whose X-Forwarded-For it believes: IP addresses, CIDR
   * ranges, or `loopback`, `linklocal`, `uniquelocal`. A request's client address (the rate limits'
   * per-caller key, security logs) is then the nearest one in that header that is not a trusted
   * proxy. Default: env ASSEMBLY_LINE_TRUST_PROXY (comma-separated), else none: the socket's address,
   * whatever the headers say.
   */
  trustProxy?: string | string[];
  /** Host-forced model for every run a channel starts (e.g. `scripted:/abs/script.json` in dev). */
  model?: string;
  attachments?: AttachmentOptions;
  outbox?: OutboxOptions;
  /** Started with the host; each due schedule's payload `{ message, conversationId? }` becomes a mailbox run. */
  scheduler?: Scheduler;
  /** Sinks that receive the runtime's spans (captureContent applied), flushed at shutdown. */
  telemetry?: TelemetrySink | TelemetrySink[];
  /** How often runs orphaned by a dead replica are looked for, 1 to 2147483647 ms (default: the lease TTL). */
  recoveryIntervalMs?: number;
}

/** The host settings after options and environment are combined. */
export interface HostConfig {
  devMode: boolean;
  port: number;
  host: string;
  maxConcurrentRuns: number;
  maxQueuedRuns: number;
  shutdownTimeoutMs: number;
  maxBodyBytes: number;
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  bodyIdleTimeoutMs: number;
  maxConnections: number;
  /** The request's client address, through the trusted proxies (`trustProxy`). */
  clientAddress: ClientAddressOf;
  leaseTtlMs: number;
  recoveryIntervalMs: number;
}

export const DEFAULT_PORT = 3000;
export const DEFAULT_MAX_CONCURRENT_RUNS = 16;
export const DEFAULT_MAX_QUEUED_RUNS = 16;
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
// An unauthenticated caller can hold a connection (and up to maxBodyBytes of its body) this long at most.
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_CONNECTIONS = 1024;
const DEFAULT_LEASE_TTL_MS = 30_000;

export function resolveHostConfig(options: NodeRuntimeOptions, env: Record<string, string | undefined>): HostConfig {
  for (const decided of ["owesDelivery", "owesFailureDelivery"]) {
    if ((options as unknown as Record<string, unknown>)[decided] !== undefined) {
      throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `listenNodeRuntime decides ${decided} itself, from its channel modules`, {
        fix: `Leave ${decided} out: a channel with deliver() gets its runs' replies through the outbox (and with deliverFailure() their failures), one without reads them from the run.`,
      });
    }
  }
  const devMode = options.devMode === true;
  const leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  const request = optionOrEnv(options, env, "requestTimeoutMs", "ASSEMBLY_LINE_REQUEST_TIMEOUT_MS", 1, MAX_TIMER_MS);
  const requestTimeoutMs = request?.value ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const headers = optionOrEnv(options, env, "headersTimeoutMs", "ASSEMBLY_LINE_HEADERS_TIMEOUT_MS", 1, MAX_TIMER_MS);
  const headersTimeoutMs = headers?.value ?? Math.min(DEFAULT_HEADERS_TIMEOUT_MS, requestTimeoutMs);
  if (headers && headersTimeoutMs > requestTimeoutMs) {
    // Named as the user set them (option or env variable), so the message points at the setting to change.
    const requestName = request?.name ?? "requestTimeoutMs (default)";
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `${headers.name}=${headersTimeoutMs} is longer than ${requestName}=${requestTimeoutMs}`, {
      fix: `The headers are part of the request: set ${headers.name} at most ${requestName}.`,
    });
  }
  const trustProxy = trustProxySetting(options.trustProxy, env);
  checkAttachmentOptions(options.attachments);
  checkOutboxOptions(options.outbox);
  checkRateLimitOptions(options.rateLimit);
  return {
    devMode,
    port: integer(options.port, "port", 0, 65_535) ?? integer(envNumber(env, "PORT"), "PORT", 0, 65_535) ?? DEFAULT_PORT,
    host: options.host ?? (env.HOST || undefined) ?? (devMode ? "127.0.0.1" : "0.0.0.0"),
    maxConcurrentRuns:
      integer(options.maxConcurrentRuns, "maxConcurrentRuns", 1) ??
      integer(envNumber(env, "ASSEMBLY_LINE_MAX_CONCURRENT_RUNS"), "ASSEMBLY_LINE_MAX_CONCURRENT_RUNS", 1) ??
      DEFAULT_MAX_CONCURRENT_RUNS,
    maxQueuedRuns:
      integer(options.maxQueuedRuns, "maxQueuedRuns", 0) ??
      integer(envNumber(env, "ASSEMBLY_LINE_MAX_QUEUED_RUNS"), "ASSEMBLY_LINE_MAX_QUEUED_RUNS", 0) ??
      DEFAULT_MAX_QUEUED_RUNS,
    // A timer given more than MAX_TIMER_MS fires at once: "wait as long as it takes" would give up at once.
    shutdownTimeoutMs:
      integer(options.shutdownTimeoutMs, "shutdownTimeoutMs", 0, MAX_TIMER_MS) ??
      integer(envNumber(env, "ASSEMBLY_LINE_SHUTDOWN_TIMEOUT_MS"), "ASSEMBLY_LINE_SHUTDOWN_TIMEOUT_MS", 0, MAX_TIMER_MS) ??
      DEFAULT_SHUTDOWN_TIMEOUT_MS,
    maxBodyBytes: integer(options.maxBodyBytes, "maxBodyBytes", 1) ?? DEFAULT_MAX_BODY_BYTES,
    requestTimeoutMs,
    headersTimeoutMs,
    bodyIdleTimeoutMs: optionOrEnv(options, env, "bodyIdleTimeoutMs", "ASSEMBLY_LINE_BODY_IDLE_TIMEOUT_MS", 1, MAX_TIMER_MS)?.value ?? DEFAULT_BODY_IDLE_TIMEOUT_MS,
    maxConnections: optionOrEnv(options, env, "maxConnections", "ASSEMBLY_LINE_MAX_CONNECTIONS", 1)?.value ?? DEFAULT_MAX_CONNECTIONS,
    clientAddress: clientAddressOf(trustProxy?.list, trustProxy?.source ?? "trustProxy"),
    leaseTtlMs,
    // Past MAX_TIMER_MS the sweep's timer would fire every millisecond, listing every queued and running run each time.
    recoveryIntervalMs: integer(options.recoveryIntervalMs, "recoveryIntervalMs", 1, MAX_TIMER_MS) ?? leaseTtlMs,
  };
}

/**
 * `attachments`, checked as the host starts: taken as given, a maxBytes of "10MB" (an env string passed
 * through) compared false with every size and turned the cap off.
 */
function checkAttachmentOptions(attachments: AttachmentOptions | undefined): void {
  const section = optionSection(attachments, "attachments", ["maxBytes", "allowedHosts", "timeoutMs"]);
  if (!section) return;
  integer(section.maxBytes, "attachments.maxBytes", 1);
  integer(section.timeoutMs, "attachments.timeoutMs", 1, MAX_TIMER_MS);
  const hosts = section.allowedHosts;
  if (hosts !== undefined && (!Array.isArray(hosts) || hosts.some((host) => typeof host !== "string" || host.trim() === ""))) {
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `attachments.allowedHosts=${JSON.stringify(hosts)} is not a list of host names`, {
      fix: 'Set attachments.allowedHosts to host names, exact or "*.example.com", e.g. ["files.example.com"], or leave it out.',
    });
  }
}

/** `outbox`, checked as the host starts: a delay or count that is not a whole number would stall or spin the worker. */
function checkOutboxOptions(outbox: OutboxOptions | undefined): void {
  const section = optionSection(outbox, "outbox", ["pollIntervalMs", "maxAttempts", "baseDelayMs", "maxDelayMs", "deliverTimeoutMs", "batchSize"]);
  if (!section) return;
  integer(section.pollIntervalMs, "outbox.pollIntervalMs", 1, MAX_TIMER_MS);
  integer(section.maxAttempts, "outbox.maxAttempts", 1);
  integer(section.baseDelayMs, "outbox.baseDelayMs", 0);
  integer(section.maxDelayMs, "outbox.maxDelayMs", 0);
  integer(section.deliverTimeoutMs, "outbox.deliverTimeoutMs", 1, MAX_TIMER_MS);
  integer(section.batchSize, "outbox.batchSize", 1);
}

/**
 * `rateLimit`, checked as the host starts: taken as given, a misspelt field ran the default limits
 * without it, a `keyFor` that is not a function answered every limited request 500, and a store
 * without `take()` let every request through, logging each as a store failure.
 */
function checkRateLimitOptions(rateLimit: false | RateLimitOptions | undefined): void {
  if (rateLimit === false) return;
  const section = optionSection(rateLimit, "rateLimit", ["limits", "store", "keyFor"]);
  if (!section) return;
  if (section.keyFor !== undefined && typeof section.keyFor !== "function") {
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `rateLimit.keyFor is ${shown(section.keyFor)}, not a function`, {
      fix: "Set rateLimit.keyFor to a function (request) => string | undefined, the key to count the request under (undefined exempts it), or leave it out for the default keys.",
    });
  }
  const store = section.store as { take?: unknown } | null | undefined;
  if (store !== undefined && (typeof store !== "object" || store === null || typeof store.take !== "function")) {
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `rateLimit.store is ${shown(store)} without a take() function, not a RateLimiterStore`, {
      fix: "Pass a RateLimiterStore, an object whose async take(key, { capacity, refillPerSecond }) answers { allowed, remaining, retryAfterMs } (redisRateLimiterStore() of @assemblyline-agents/redis is one), or leave store out for in-process memory.",
    });
  }
  const limits = optionSection(section.limits, "rateLimit.limits", RATE_LIMIT_BUCKETS);
  for (const [bucket, limit] of Object.entries(limits ?? {})) {
    // A bucket set to undefined is left out: not limited.
    if (limit === undefined) continue;
    const name = `rateLimit.limits.${bucket}`;
    const fields = optionSection(limit, name, ["capacity", "refillPerSecond"])!;
    for (const field of ["capacity", "refillPerSecond"]) {
      if (typeof fields[field] !== "number") {
        throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `${name}.${field} is ${shown(fields[field])}, not a number`, {
          fix: `Set ${name} to { capacity, refillPerSecond }, both positive numbers (tokens, and tokens regained per second), e.g. { capacity: 10, refillPerSecond: 1 }.`,
        });
      }
    }
    // Positive and finite, as every RateLimiterStore requires (AL_ERR_RATE_LIMIT_CONFIG).
    checkRateLimitRequest(name, fields as unknown as BucketLimit);
  }
}

/** A value as an option's error shows it. */
function shown(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return JSON.stringify(value) ?? typeof value;
}

/** An options object with only the `known` fields (a misspelt one would be dropped silently), or undefined when left out. */
function optionSection(value: unknown, name: string, known: readonly string[]): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `${name} is ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}, not an object`, {
      fix: `Set ${name} to { ${known.map((field) => `${field}?`).join(", ")} }, or leave it out.`,
    });
  }
  const unknown = Object.keys(value).find((field) => !known.includes(field));
  if (unknown !== undefined) {
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `${name}.${unknown} is not an option of ${name}`, {
      fix: `${name} takes ${known.join(", ")}.`,
    });
  }
  return value as Record<string, unknown>;
}

/** The option when given, else its env variable, checked and with the name it was set by; undefined when neither is. */
function optionOrEnv(
  options: NodeRuntimeOptions,
  env: Record<string, string | undefined>,
  option: "requestTimeoutMs" | "headersTimeoutMs" | "bodyIdleTimeoutMs" | "maxConnections",
  variable: string,
  min: number,
  max?: number,
): { value: number; name: string } | undefined {
  const given = integer(options[option], option, min, max);
  if (given !== undefined) return { value: given, name: option };
  const fromEnv = integer(envNumber(env, variable), variable, min, max);
  return fromEnv === undefined ? undefined : { value: fromEnv, name: variable };
}

/** An env variable as a number, or the raw text when it is not one (so the error can quote it). */
function envNumber(env: Record<string, string | undefined>, name: string): number | string | undefined {
  const value = env[name];
  if (value === undefined || value.trim() === "") return undefined;
  return Number.isNaN(Number(value)) ? value : Number(value);
}

function integer(value: unknown, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `${name}=${JSON.stringify(value)} is not an integer in ${min}..${max === Number.MAX_SAFE_INTEGER ? "" : max}`, {
      fix: max === Number.MAX_SAFE_INTEGER ? `Set ${name} to an integer of at least ${min}.` : `Set ${name} to an integer from ${min} to ${max}.`,
    });
  }
  return value;
}
