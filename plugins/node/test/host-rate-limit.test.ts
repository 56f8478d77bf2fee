import { beforeAll, describe, expect, it } from "vitest";
import { errorSummary, type AssemblyLineError, type RateLimiterStore } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { MemoryRateLimiterStore, parseRateLimitEnv } from "../src/index.js";
import { describeRateLimiterStoreConformance } from "@assemblyline-agents/core/testkit";
import { call, fixtureBundle, signedEvent, startHost } from "./support/host.js";

describeRateLimiterStoreConformance("MemoryRateLimiterStore", () => memory);
const memory = new MemoryRateLimiterStore();

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

const message = (url: string, headers: Record<string, string> = {}) => call(`${url}/message`, { body: { message: "echo: hi" }, headers });
const statuses = async (count: number, send: () => Promise<{ status: number }>) => {
  const out: number[] = [];
  for (let i = 0; i < count; i += 1) out.push((await send()).status);
  return out;
};

describe("ingress rate limits", () => {
  it("are off by default", async () => {
    const host = await startHost(bundle, { maxQueuedRuns: 100 });
    expect(new Set(await statuses(25, () => message(host.url)))).toEqual(new Set([202]));
  });

  it("send Retry-After as whole seconds, at most a year, for a limit that practically never refills", async () => {
    const host = await startHost(bundle, { rateLimit: { limits: { "run-create": { capacity: 1, refillPerSecond: 1e-300 } } } });
    expect(await statuses(1, () => message(host.url))).toEqual([202]);
    const refused = await message(host.url);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe(String(365 * 86_400));
  });

  it("refuse a bucket's excess with 429, Retry-After and a JSON error, leaving other buckets alone", async () => {
    const host = await startHost(bundle, { rateLimit: { limits: { "run-create": { capacity: 2, refillPerSecond: 0.5 } } } });
    expect(await statuses(2, () => message(host.url))).toEqual([202, 202]);
    const refused = await message(host.url);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("2");
    expect(refused.body.error.code).toBe("AL_ERR_RATE_LIMITED");
    // Provider traffic is the provider-channel bucket, which is not limited here.
    let id = 0;
    const provider = () => {
      const event = signedEvent({ type: "message", id: `e${(id += 1)}`, conversation: `c${id}`, text: "echo: x" });
      return call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    };
    expect(new Set(await statuses(5, provider))).toEqual(new Set([202]));
    expect(host.logger.events("ingress.rejected").map((entry) => entry.fields.reason)).toEqual(["rate_limit"]);
  });

  it("limit provider events per channel in the provider-channel bucket", async () => {
    const host = await startHost(bundle, { rateLimit: { limits: { "provider-channel": { capacity: 1, refillPerSecond: 0.1 } } } });
    const send = (id: string) => {
      const event = signedEvent({ type: "message", id, conversation: id, text: "echo: x" });
      return call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    };
    expect((await send("a")).status).toBe(202);
    expect((await send("b")).status).toBe(429);
    expect((await message(host.url)).status).toBe(202);
  });

  it("take a provider channel's token only for requests its channel verified", async () => {
    const host = await startHost(bundle, { rateLimit: { limits: { "provider-channel": { capacity: 2, refillPerSecond: 0.01 } } } });
    const unsigned = () => call(`${host.url}/provider/events`, { body: { type: "message", id: "forged", conversation: "c", text: "echo: x" } });
    expect(await statuses(5, unsigned)).toEqual([401, 401, 401, 401, 401]);
    const signed = (id: string) => {
      const event = signedEvent({ type: "message", id, conversation: id, text: "echo: x" });
      return call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    };
    expect(await statuses(3, () => signed(`e${Math.random()}`))).toEqual([202, 202, 429]);
  });

  it("key a caller by its bearer token only when the token is a configured one", async () => {
    const host = await startHost(bundle, {
      devMode: false,
      // A policy lets this caller in whatever token it sends: made-up tokens must not each get a bucket of their own.
      auth: { bearerToken: "real-token", authorize: (request) => request.remoteAddress === "127.0.0.1" || request.remoteAddress === "::ffff:127.0.0.1" },
      rateLimit: { limits: { "run-create": { capacity: 2, refillPerSecond: 0.01 } } },
    });
    let junk = 0;
    expect(await statuses(4, () => message(host.url, { authorization: `Bearer junk-${(junk += 1)}` }))).toEqual([202, 202, 429, 429]);
    // The configured token is a key of its own, apart from the address the made-up ones shared.
    expect(await statuses(3, () => message(host.url, { authorization: "Bearer real-token" }))).toEqual([202, 202, 429]);
  });

  it("key raw callers apart by bearer token, and keyFor can exempt a request", async () => {
    const host = await startHost(bundle, {
      rateLimit: {
        limits: { "run-create": { capacity: 1, refillPerSecond: 0.1 } },
        keyFor: (request) => (request.headers["x-internal"] === "yes" ? undefined : request.headers["x-caller"] ?? "anonymous"),
      },
    });
    expect((await message(host.url, { "x-caller": "a" })).status).toBe(202);
    expect((await message(host.url, { "x-caller": "a" })).status).toBe(429);
    expect((await message(host.url, { "x-caller": "b" })).status).toBe(202);
    expect(new Set(await statuses(5, () => message(host.url, { "x-caller": "a", "x-internal": "yes" })))).toEqual(new Set([202]));
  });

  it("read ASSEMBLY_LINE_RATE_LIMIT, which rateLimit: false switches off", async () => {
    const env = { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_RATE_LIMIT: "run-create=1/0.1" };
    const fromEnv = await startHost(bundle, { env });
    expect(await statuses(2, () => message(fromEnv.url))).toEqual([202, 429]);
    const disabled = await startHost(bundle, { env, rateLimit: false });
    expect(await statuses(3, () => message(disabled.url))).toEqual([202, 202, 202]);
    expect(parseRateLimitEnv("provider-channel=60/10, run-create=10/1")).toEqual({
      "provider-channel": { capacity: 60, refillPerSecond: 10 },
      "run-create": { capacity: 10, refillPerSecond: 1 },
    });
    expect(() => parseRateLimitEnv("runs=1/1")).toThrow(/AL_ERR_RATE_LIMIT_CONFIG/);
    // A malformed one stops the start, and leaves no runtime open behind it.
    let closed = false;
    const state = Object.assign(new InMemoryStateAdapter(), { close: async () => void (closed = true) });
    await expect(startHost(bundle, { state, env: { ...env, ASSEMBLY_LINE_RATE_LIMIT: "runs=1/1" } })).rejects.toMatchObject({ code: "AL_ERR_RATE_LIMIT_CONFIG" });
    expect(closed).toBe(true);
  });

  it("take from a plugged-in store, and let requests through (logged) when it fails", async () => {
    const keys: string[] = [];
    const recording: RateLimiterStore = {
      async take(key, request) {
        keys.push(key);
        return memory.take(`recording:${key}`, request);
      },
    };
    const host = await startHost(bundle, { auth: { bearerToken: "abc" }, rateLimit: { store: recording, limits: { "run-create": { capacity: 5, refillPerSecond: 1 } } } });
    await message(host.url, { authorization: "Bearer abc" });
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^host-agent:run-create:token:[0-9a-f]{16}$/);
    expect(keys[0]).not.toContain("abc");

    const broken = await startHost(bundle, {
      rateLimit: { store: { take: async () => Promise.reject(new Error("redis down")) }, limits: { "run-create": { capacity: 1, refillPerSecond: 1 } } },
    });
    expect(await statuses(2, () => message(broken.url))).toEqual([202, 202]);
    expect(broken.logger.events("rate_limit.store_failed")).toHaveLength(2);

    // A store whose server is down may retry for tens of seconds: the host does not wait for it.
    const stalled = await startHost(bundle, {
      rateLimit: { store: { take: () => new Promise(() => {}) }, limits: { "run-create": { capacity: 1, refillPerSecond: 1 } } },
    });
    expect(await statuses(1, () => message(stalled.url))).toEqual([202]);
    expect(stalled.logger.events("rate_limit.store_failed")).toHaveLength(1);
  });

  it("refuse options the host would not apply as it starts, naming the option and the fix", async () => {
    const refused = async (rateLimit: unknown) => {
      const error = await startHost(bundle, { rateLimit: rateLimit as never }).then(
        () => undefined,
        (thrown: unknown) => thrown as AssemblyLineError,
      );
      // Each says how to fix it, besides what is wrong.
      expect(error?.fix).toMatch(/\w/);
      return error && { code: error.code, message: errorSummary(error) };
    };
    const limit = { capacity: 1, refillPerSecond: 0.001 };
    // "limit" for "limits": the host would run DEFAULT_RATE_LIMITS, never the 1-request limit asked for.
    expect(await refused({ limit: { "run-create": limit } })).toEqual({ code: "AL_ERR_HOST_CONFIG", message: "rateLimit.limit is not an option of rateLimit" });
    // Not a function: every request on a limited route answered 500.
    expect(await refused({ keyFor: "ip" })).toEqual({ code: "AL_ERR_HOST_CONFIG", message: 'rateLimit.keyFor is "ip", not a function' });
    // No take(): every request let through unlimited, each logged as a store failure.
    expect(await refused({ store: {}, limits: { "run-create": limit } })).toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining("rateLimit.store is an object without a take() function") });
    expect(await refused({ store: null })).toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining("rateLimit.store is null") });
    expect(await refused({ limits: [limit] })).toEqual({ code: "AL_ERR_HOST_CONFIG", message: "rateLimit.limits is an array, not an object" });
    expect(await refused({ limits: { runs: limit } })).toEqual({ code: "AL_ERR_HOST_CONFIG", message: "rateLimit.limits.runs is not an option of rateLimit.limits" });
    expect(await refused({ limits: { "run-create": 10 } })).toEqual({ code: "AL_ERR_HOST_CONFIG", message: "rateLimit.limits.run-create is number, not an object" });
    expect(await refused({ limits: { "run-create": { capacity: 1, refill: 1 } } })).toEqual({
      code: "AL_ERR_HOST_CONFIG",
      message: "rateLimit.limits.run-create.refill is not an option of rateLimit.limits.run-create",
    });
    expect(await refused({ limits: { "run-create": { capacity: "10", refillPerSecond: 1 } } })).toEqual({
      code: "AL_ERR_HOST_CONFIG",
      message: 'rateLimit.limits.run-create.capacity is "10", not a number',
    });
    expect(await refused({ limits: { "run-create": { capacity: 1 } } })).toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining("refillPerSecond is undefined") });
    expect(await refused({ limits: { "run-create": { capacity: 0, refillPerSecond: 1 } } })).toMatchObject({ code: "AL_ERR_RATE_LIMIT_CONFIG", message: expect.stringContaining("capacity 0 is not positive") });
    expect(await refused(true)).toEqual({ code: "AL_ERR_HOST_CONFIG", message: "rateLimit is boolean, not an object" });
    // What the host applies as given still starts.
    const host = await startHost(bundle, { rateLimit: { limits: { "run-create": limit, "provider-channel": undefined }, keyFor: () => "all", store: new MemoryRateLimiterStore() } });
    expect(await statuses(2, () => message(host.url))).toEqual([202, 429]);
  });

  it("keep each agent's buckets its own on a store agents share", async () => {
    const shared = new MemoryRateLimiterStore();
    const limits = { "run-create": { capacity: 1, refillPerSecond: 0.001 } };
    const first = await startHost(bundle, { rateLimit: { store: shared, limits } });
    const second = await startHost(await fixtureBundle("other-agent"), { rateLimit: { store: shared, limits } });
    expect(await statuses(2, () => message(first.url))).toEqual([202, 429]);
    // The same caller, the same bucket, another agent: its own token.
    expect(await statuses(2, () => message(second.url))).toEqual([202, 429]);
  });
});
