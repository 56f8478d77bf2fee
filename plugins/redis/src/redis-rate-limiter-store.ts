import { Redis, type Cluster } from "ioredis";
import { AssemblyLineError, MAX_TIMER_MS, checkRateLimitRequest, isTimerDelay, type RateLimitDecision, type RateLimitRequest, type RateLimiterStore } from "@assemblyline-agents/core";
import { TOKEN_BUCKET_LUA } from "./token-bucket.lua.js";

const COMMAND = "assemblyLineTakeTokens";
const DEFAULT_URL = "redis://127.0.0.1:6379";

export interface RedisRateLimiterStoreOptions {
  /** A client you own (also a Cluster); the store never closes it. */
  client?: Redis | Cluster;
  /** Connect to this URL when no client is given. Default: env REDIS_URL, else redis://127.0.0.1:6379. */
  url?: string;
  /** Prefix of every bucket key. Default "al:rl:". */
  keyPrefix?: string;
  /** Per-command bound for a store-owned client, so a stalled Redis cannot stall ingress. Default 1 000 ms. */
  commandTimeoutMs?: number;
  env?: Record<string, string | undefined>;
}

const OPTION_TYPES: Record<keyof RedisRateLimiterStoreOptions, string> = {
  client: "object",
  url: "string",
  keyPrefix: "string",
  commandTimeoutMs: "number",
  env: "object",
};

/**
 * Refuse options the store would ignore or misread, naming them: a typo
 * (`keyprefix`: every replica's buckets would land under the default prefix), a
 * wrong type, or a timeout that is not a positive number of ms.
 */
function checkOptions(options: unknown): void {
  const fail = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_PLUGIN_OPTIONS", `redisRateLimiterStore(): ${problem}`, { fix });
  };
  if (typeof options !== "object" || options === null || Array.isArray(options)) fail("the options are not an object", "Pass { url?, client?, keyPrefix?, commandTimeoutMs? } or nothing.");
  const given = options as Record<string, unknown>;
  const known = Object.keys(OPTION_TYPES);
  const unknown = Object.keys(given).filter((key) => !known.includes(key));
  if (unknown.length > 0) fail(`unknown option${unknown.length === 1 ? "" : "s"} ${unknown.map((key) => JSON.stringify(key)).join(", ")}`, `The options are ${known.join(", ")}.`);
  for (const [key, expected] of Object.entries(OPTION_TYPES)) {
    const value = given[key];
    if (value === undefined) continue;
    const actual = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
    if (actual !== expected) fail(`option ${key} must be a${expected === "object" ? "n" : ""} ${expected}, got ${actual}`, `Pass ${key} as a${expected === "object" ? "n" : ""} ${expected}, or leave it out.`);
  }
  // Anything else (a { host, port } object meant as connection options) would fail later, as a bare TypeError.
  const client = given.client as Record<string, unknown> | undefined;
  if (client !== undefined && (typeof client.defineCommand !== "function" || typeof client.evalsha !== "function")) {
    fail("option client is not an ioredis client (it has no defineCommand and evalsha)", "Pass an ioredis Redis or Cluster (new Redis(url), new Cluster(nodes)), or leave client out and pass url.");
  }
  if (given.url === "") fail("option url is empty", "Pass a redis:// URL, or leave url out to read REDIS_URL.");
  // Both shape the store's own connection: a client given is used as it was built.
  for (const own of ["url", "commandTimeoutMs"]) {
    if (given.client !== undefined && given[own] !== undefined) fail(`option ${own} is for the store's own connection; with client it would be ignored`, `Leave ${own} out, or build the client with it (e.g. new Redis(url, { commandTimeout: 1000, maxRetriesPerRequest: 1 })).`);
  }
  const timeout = given.commandTimeoutMs as number | undefined;
  if (timeout !== undefined && !isTimerDelay(timeout)) fail(`option commandTimeoutMs is ${timeout}; it must be a positive number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`, "Pass e.g. 1000, or leave it out.");
}

/**
 * The address a store-owned client connects to: `url`, else REDIS_URL (an empty one counts as unset),
 * else the local default. ioredis reads `redis://` and `rediss://` URLs, a socket path (`/tmp/redis.sock`)
 * and a bare `host:port`; anything else must parse as a redis URL with a host: a URL of any other scheme it misreads (`http://host:7000` as host "http" and a
 * socket path) and would connect there without a word, so that is refused, as is a redis URL with no
 * host. Parsed with WHATWG URL, and handed on as it serializes it; the value itself is not shown: it may hold a password.
 */
function redisUrl(option: string | undefined, fromEnv: string | undefined): string {
  const [text, source] = option !== undefined ? [option, "option url"] : fromEnv !== undefined && fromEnv.trim() !== "" ? [fromEnv.trim(), "REDIS_URL"] : [DEFAULT_URL, "the default"];
  // What ioredis reads as it is: a socket path, a bare host or host:port. Anything else with a scheme (`rediss:/host`, one slash, too) must be a redis URL.
  if (text.startsWith("/") || /^[^:/\s@]+(:\d+)?$/.test(text)) return text;
  const parsed = URL.canParse(text) ? new URL(text) : undefined;
  const redisScheme = parsed?.protocol === "redis:" || parsed?.protocol === "rediss:";
  if (parsed === undefined || !redisScheme || parsed.hostname === "") {
    const why = parsed === undefined ? "it does not parse as a URL" : redisScheme ? "it names no host" : `its scheme is ${parsed.protocol}`;
    throw new AssemblyLineError("AL_ERR_PLUGIN_OPTIONS", `redisRateLimiterStore(): ${source} is not a redis:// or rediss:// URL with a host: ${why}`, {
      fix: `Set ${source === "REDIS_URL" ? "REDIS_URL" : "url"} to e.g. redis://:password@redis.internal:6379/0 (rediss:// for TLS) or a socket path, or pass a client you built.`,
    });
  }
  // The URL as checked, serialized: its scheme lower-cased. ioredis turns TLS on only for a literal
  // "rediss://", so `REDISS://` as written would connect in plain TCP and send AUTH, password and all, in clear.
  return parsed.href;
}

/** The store's own client; a URL ioredis still cannot read is refused without its text (its error quotes it, password and all). */
function ownClient(url: string, commandTimeout: number): Redis {
  try {
    return new Redis(url, { commandTimeout, maxRetriesPerRequest: 1 });
  } catch {
    throw new AssemblyLineError("AL_ERR_PLUGIN_OPTIONS", "redisRateLimiterStore(): the Redis address could not be read", {
      fix: "Set url or REDIS_URL to e.g. redis://:password@redis.internal:6379/0 (rediss:// for TLS) or a socket path, or pass a client you built.",
    });
  }
}

type TakeCommand = (key: string, capacity: number, refillPerSecond: number, cost: number, now: number) => Promise<[number, string, string]>;

/** A number the script wrote with %.17g: exact, and "inf" for a wait no refill ever ends, which the in-process store answers as Infinity. */
function scriptNumber(text: unknown): number {
  return text === "inf" ? Infinity : typeof text === "string" && text !== "" ? Number(text) : NaN;
}

/**
 * A RateLimiterStore shared by every replica through Redis. Each take is one
 * Lua script call (EVALSHA through ioredis defineCommand, re-sent whole only if
 * the server lost the script), so the read-refill-take-write of a bucket is
 * atomic and costs one round trip.
 */
export class RedisRateLimiterStore implements RateLimiterStore {
  readonly client: Redis | Cluster;
  private readonly owned: boolean;
  private readonly keyPrefix: string;

  constructor(options: RedisRateLimiterStoreOptions = {}) {
    checkOptions(options);
    const env = options.env ?? process.env;
    this.owned = options.client === undefined;
    this.client = options.client ?? ownClient(redisUrl(options.url, env.REDIS_URL), options.commandTimeoutMs ?? 1_000);
    // Connection errors surface on each take (AL_ERR_RATE_LIMIT_STORE); without a listener ioredis prints them too.
    if (this.owned) this.client.on("error", () => undefined);
    this.keyPrefix = options.keyPrefix ?? "al:rl:";
    this.client.defineCommand(COMMAND, { numberOfKeys: 1, lua: TOKEN_BUCKET_LUA });
  }

  async take(key: string, request: RateLimitRequest): Promise<RateLimitDecision> {
    const cost = checkRateLimitRequest(key, request).cost;
    let reply: [number, string, string];
    try {
      const command = (this.client as unknown as Record<string, TakeCommand>)[COMMAND]!;
      reply = await command.call(this.client, this.keyPrefix + key, request.capacity, request.refillPerSecond, cost, request.now ?? -1);
    } catch (error) {
      throw new AssemblyLineError("AL_ERR_RATE_LIMIT_STORE", `Redis rate-limit take for ${JSON.stringify(key)} failed: ${(error as Error).message}`, {
        fix: "Check that Redis is reachable (REDIS_URL) and accepts EVALSHA; the Node host lets requests through meanwhile.",
        cause: error,
      });
    }
    const [allowed, tokens, retry] = Array.isArray(reply) ? reply : [];
    const remaining = scriptNumber(tokens);
    const retryAfterMs = scriptNumber(retry);
    if (!Number.isFinite(remaining) || Number.isNaN(retryAfterMs) || typeof allowed !== "number") {
      throw new AssemblyLineError("AL_ERR_RATE_LIMIT_STORE", `Redis answered ${JSON.stringify(reply)} to a rate-limit take`, {
        fix: `Another program may have written a non-bucket value at ${this.keyPrefix + key}; choose another keyPrefix.`,
      });
    }
    return { allowed: allowed === 1, remaining: Math.floor(remaining), retryAfterMs: allowed === 1 ? 0 : retryAfterMs };
  }

  /** Close the connection when the store opened it (a client you passed stays open). */
  async close(): Promise<void> {
    if (this.owned) await this.client.quit().catch(() => this.client.disconnect());
  }
}


/** A shared RateLimiterStore for `listenNodeRuntime({ rateLimit: { store: redisRateLimiterStore() } })`. */
export function redisRateLimiterStore(options: RedisRateLimiterStoreOptions = {}): RedisRateLimiterStore {
  return new RedisRateLimiterStore(options);
}
