import {
  AssemblyLineError,
  checkRateLimitRequest,
  withinTimeout,
  type RateLimitDecision,
  type RateLimitRequest,
  type RateLimiterStore,
  type RuntimeLogger,
} from "@assemblyline-agents/core";

/** The ingress buckets: provider webhooks, and requests that create runs directly. */
export type RateLimitBucket = "provider-channel" | "run-create";
export const RATE_LIMIT_BUCKETS: readonly RateLimitBucket[] = ["provider-channel", "run-create"];

export interface BucketLimit {
  capacity: number;
  refillPerSecond: number;
}

/** What `keyFor` sees of a request. */
export interface RateLimitKeyRequest {
  bucket: RateLimitBucket;
  channel: string;
  method: string;
  path: string;
  headers: Record<string, string | undefined>;
  remoteAddress: string | undefined;
}

export interface RateLimitOptions {
  /** Per-bucket limits; a bucket left out is not limited. Default: env ASSEMBLY_LINE_RATE_LIMIT, else DEFAULT_RATE_LIMITS. */
  limits?: Partial<Record<RateLimitBucket, BucketLimit>>;
  /** A shared store for multi-replica deployments; in-process memory by default. */
  store?: RateLimiterStore;
  /** The bucket key of a request; return undefined to exempt it. */
  keyFor?(request: RateLimitKeyRequest): string | undefined;
}

/** Used when rate limiting is on but no limits are given. */
export const DEFAULT_RATE_LIMITS: Record<RateLimitBucket, BucketLimit> = {
  "provider-channel": { capacity: 60, refillPerSecond: 10 },
  "run-create": { capacity: 10, refillPerSecond: 1 },
};

/** The contract checks every RateLimiterStore applies (from the SDK, shared with the Redis store). */
export { checkRateLimitRequest };

interface Bucket {
  tokens: number;
  /** ms time the tokens were computed at. */
  at: number;
}

/** Buckets kept before full ones are swept: a flood of distinct keys cannot grow memory without bound. */
const SWEEP_ABOVE = 10_000;

/** The in-process token-bucket store: the default when no shared store is given. */
export class MemoryRateLimiterStore implements RateLimiterStore {
  private readonly buckets = new Map<string, Bucket & { capacity: number; refillPerSecond: number }>();

  async take(key: string, request: RateLimitRequest): Promise<RateLimitDecision> {
    const { cost } = checkRateLimitRequest(key, request);
    const now = request.now ?? Date.now();
    const previous = this.buckets.get(key);
    let tokens = previous ? Math.min(request.capacity, previous.tokens + (Math.max(0, now - previous.at) / 1000) * request.refillPerSecond) : request.capacity;
    const at = previous ? Math.max(previous.at, now) : now;
    let decision: RateLimitDecision;
    if (tokens >= cost) {
      tokens -= cost;
      decision = { allowed: true, remaining: Math.floor(tokens), retryAfterMs: 0 };
    } else {
      decision = { allowed: false, remaining: Math.floor(tokens), retryAfterMs: Math.ceil(((cost - tokens) / request.refillPerSecond) * 1000) };
    }
    this.buckets.delete(key);
    this.buckets.set(key, { tokens, at, capacity: request.capacity, refillPerSecond: request.refillPerSecond });
    if (this.buckets.size > SWEEP_ABOVE) this.sweep(now);
    return decision;
  }

  private sweep(now: number): void {
    for (const [key, bucket] of this.buckets) {
      const refilled = bucket.tokens + ((now - bucket.at) / 1000) * bucket.refillPerSecond;
      if (refilled >= bucket.capacity) this.buckets.delete(key);
    }
    // Still too many live buckets: drop the least recently used (Map keeps insertion order).
    for (const key of this.buckets.keys()) {
      if (this.buckets.size <= SWEEP_ABOVE) break;
      this.buckets.delete(key);
    }
  }
}

/** Parse ASSEMBLY_LINE_RATE_LIMIT: `provider-channel=60/10,run-create=10/1` (capacity/refillPerSecond). */
export function parseRateLimitEnv(value: string): Partial<Record<RateLimitBucket, BucketLimit>> {
  const limits: Partial<Record<RateLimitBucket, BucketLimit>> = {};
  for (const part of value.split(",").map((entry) => entry.trim()).filter(Boolean)) {
    const match = /^([a-z-]+)=([0-9.]+)\/([0-9.]+)$/.exec(part);
    const bucket = match?.[1] as RateLimitBucket | undefined;
    if (!match || !bucket || !RATE_LIMIT_BUCKETS.includes(bucket) || !(Number(match[2]) > 0) || !(Number(match[3]) > 0)) {
      throw new AssemblyLineError("AL_ERR_RATE_LIMIT_CONFIG", `ASSEMBLY_LINE_RATE_LIMIT entry ${JSON.stringify(part)} is not <bucket>=<capacity>/<refillPerSecond>`, {
        fix: `Write e.g. ASSEMBLY_LINE_RATE_LIMIT="provider-channel=60/10,run-create=10/1" (buckets: ${RATE_LIMIT_BUCKETS.join(", ")}).`,
      });
    }
    limits[bucket] = { capacity: Number(match[2]), refillPerSecond: Number(match[3]) };
  }
  return limits;
}

export interface RateLimitRefusal {
  bucket: RateLimitBucket;
  retryAfterMs: number;
}

/**
 * How long the host waits for a store's answer before letting the request through: a store
 * whose server is down may retry for tens of seconds, and every limited request would wait.
 */
export const STORE_TAKE_DEADLINE_MS = 1_000;

/**
 * Ingress rate limiting: picks the request's bucket key and takes a token from
 * the store. A failing or slow store lets the request through (logged): a rate-limit
 * outage must not take the ingress down with it. Keys are the agent's own
 * (`<agentId>:<bucket>:<key>`): agents sharing a store never spend each other's buckets.
 */
export class IngressRateLimiter {
  constructor(
    private readonly agentId: string,
    private readonly limits: Partial<Record<RateLimitBucket, BucketLimit>>,
    private readonly store: RateLimiterStore,
    private readonly keyFor: (request: RateLimitKeyRequest) => string | undefined,
    private readonly logger: RuntimeLogger,
  ) {
    for (const [bucket, limit] of Object.entries(limits)) {
      // A bucket set to undefined is left out, as check() reads it: not limited.
      if (limit === undefined) continue;
      if (!RATE_LIMIT_BUCKETS.includes(bucket as RateLimitBucket)) {
        throw new AssemblyLineError("AL_ERR_RATE_LIMIT_CONFIG", `rateLimit.limits has an unknown bucket ${JSON.stringify(bucket)}`, {
          fix: `Use ${RATE_LIMIT_BUCKETS.map((name) => JSON.stringify(name)).join(" or ")}.`,
        });
      }
      checkRateLimitRequest(bucket, { capacity: limit.capacity, refillPerSecond: limit.refillPerSecond });
    }
  }

  /** Undefined when the request may proceed. */
  async check(request: RateLimitKeyRequest): Promise<RateLimitRefusal | undefined> {
    const limit = this.limits[request.bucket];
    if (!limit) return undefined;
    const key = this.keyFor(request);
    if (key === undefined) return undefined;
    try {
      const take = this.store.take(`${this.agentId}:${request.bucket}:${key}`, { capacity: limit.capacity, refillPerSecond: limit.refillPerSecond });
      const decision = await withinTimeout(take, STORE_TAKE_DEADLINE_MS, "the rate-limit store's take");
      return decision.allowed ? undefined : { bucket: request.bucket, retryAfterMs: decision.retryAfterMs };
    } catch (error) {
      this.logger.warn({ event: "rate_limit.store_failed", bucket: request.bucket, err: String(error) }, "rate-limit store failed; request let through");
      return undefined;
    }
  }
}

/**
 * Provider traffic shares one bucket per channel (its requests come from the
 * provider's addresses); direct run creation is keyed per caller.
 */
export function defaultRateLimitKey(request: RateLimitKeyRequest, fingerprint: string | undefined): string {
  if (request.bucket === "provider-channel") return request.channel;
  return fingerprint ? `token:${fingerprint}` : `ip:${request.remoteAddress ?? "unknown"}`;
}

/** Off unless configured: `false` wins over everything, then options, then ASSEMBLY_LINE_RATE_LIMIT. */
export function resolveRateLimit(
  agentId: string,
  option: false | RateLimitOptions | undefined,
  env: Record<string, string | undefined>,
  logger: RuntimeLogger,
  fingerprint: (headers: Record<string, string | undefined>) => string | undefined,
): IngressRateLimiter | undefined {
  if (option === false) return undefined;
  const fromEnv = env.ASSEMBLY_LINE_RATE_LIMIT?.trim() ? parseRateLimitEnv(env.ASSEMBLY_LINE_RATE_LIMIT) : undefined;
  if (option === undefined && fromEnv === undefined) return undefined;
  const limits = option?.limits ?? fromEnv ?? DEFAULT_RATE_LIMITS;
  const keyFor = option?.keyFor ?? ((request: RateLimitKeyRequest) => defaultRateLimitKey(request, fingerprint(request.headers)));
  return new IngressRateLimiter(agentId, limits, option?.store ?? new MemoryRateLimiterStore(), keyFor, logger);
}
