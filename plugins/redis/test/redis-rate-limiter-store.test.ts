import { randomUUID } from "node:crypto";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { redisUnreachable, redisUrl } from "./support/redis.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, buildAgent, loadRuntimeBundle, scriptedHarness } from "@assemblyline-agents/runtime";
import { MemoryRateLimiterStore, listenNodeRuntime, noopLogger } from "@assemblyline-agents/node";
import { RedisRateLimiterStore, redisRateLimiterStore } from "../src/index.js";
import { MAX_BUCKET_TTL_MS } from "../src/token-bucket.lua.js";
import { describeRateLimiterStoreConformance } from "@assemblyline-agents/core/testkit";

const url = redisUrl;
const unreachable = await redisUnreachable("the Redis rate-limiter tests");

describe.skipIf(unreachable !== undefined)("RedisRateLimiterStore against a real Redis", () => {
  const prefix = `al:test:${randomUUID()}:`;
  const stores: RedisRateLimiterStore[] = [];
  const open = (options: ConstructorParameters<typeof RedisRateLimiterStore>[0] = {}) => {
    const store = new RedisRateLimiterStore({ ...(options.client ? {} : { url }), keyPrefix: prefix, ...options });
    stores.push(store);
    return store;
  };
  let shared: RedisRateLimiterStore;
  beforeAll(() => {
    shared = open();
  });
  afterAll(async () => {
    const admin = new Redis(url);
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    await admin.quit();
    await Promise.all(stores.map((store) => store.close()));
  });

  describeRateLimiterStoreConformance("RedisRateLimiterStore", () => shared);

  it("shares one bucket between replicas, granting exactly its capacity to concurrent takes", async () => {
    const [a, b] = [open(), open()];
    const key = `shared-${randomUUID()}`;
    const decisions = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).take(key, { capacity: 12, refillPerSecond: 0.001, now: 1_000 })));
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(12);
  });

  it("takes a token in one round trip (EVALSHA), and survives a SCRIPT FLUSH", async () => {
    const client = new Redis(url);
    const store = open({ client });
    await store.take(`warm-${randomUUID()}`, { capacity: 5, refillPerSecond: 1 });
    const sent: string[] = [];
    const original = client.sendCommand.bind(client);
    client.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      sent.push(command.name);
      return (original as (...args: unknown[]) => unknown)(command, ...rest);
    }) as typeof client.sendCommand;
    await store.take(`one-${randomUUID()}`, { capacity: 5, refillPerSecond: 1 });
    expect(sent).toEqual(["evalsha"]);

    await new Redis(url).script("FLUSH").then(() => undefined);
    expect((await store.take(`after-flush-${randomUUID()}`, { capacity: 5, refillPerSecond: 1 })).allowed).toBe(true);
    await store.close();
    await client.quit();
  });

  it("lets an idle bucket expire once it would be full again", async () => {
    const key = `ttl-${randomUUID()}`;
    await shared.take(key, { capacity: 10, refillPerSecond: 5 });
    const admin = new Redis(url);
    const ttl = await admin.pttl(prefix + key);
    await admin.quit();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(3_000);
  });

  // A quota that (practically) never refills is written with a tiny rate: refillPerSecond must be positive.
  it.each([
    ["1000 tokens, one back every ~30 000 years", { capacity: 1000, refillPerSecond: 1e-12 }],
    ["one token, a wait past 2^63 ms", { capacity: 1, refillPerSecond: 1e-16 }],
    ["5 tokens, refill Number.MIN_VALUE (a wait of Infinity)", { capacity: 5, refillPerSecond: Number.MIN_VALUE }],
  ])("takes from a bucket whose refill is too slow to matter (%s), deciding as the in-process store does", async (_, limit) => {
    const key = `slow-${randomUUID()}`;
    const memory = new MemoryRateLimiterStore();
    // The whole bucket at once, then one more: granted, then refused with the wait for one token.
    const takes = [{ ...limit, cost: limit.capacity, now: 1_000 }, { ...limit, cost: 1, now: 2_000 }];
    for (const take of takes) {
      const expected = await memory.take(key, take);
      expect(await shared.take(key, take), JSON.stringify(take)).toEqual(expected);
    }
    expect((await shared.take(key, takes[1]!)).retryAfterMs).toBeGreaterThan(1e14);
  });

  it("gives a bucket with a refill too slow to ever finish an expiry of at most a year, granted or refused", async () => {
    const key = `slow-ttl-${randomUUID()}`;
    const admin = new Redis(url);
    try {
      for (const allowed of [true, false]) {
        expect((await shared.take(key, { capacity: 1, refillPerSecond: 1e-12 })).allowed).toBe(allowed);
        const ttl = await admin.pttl(prefix + key);
        // -1 would be a key that lives forever.
        expect(ttl).toBeGreaterThan(MAX_BUCKET_TTL_MS - 60_000);
        expect(ttl).toBeLessThanOrEqual(MAX_BUCKET_TTL_MS);
      }
    } finally {
      await admin.quit();
    }
  });

  it("reports an unreachable Redis as AL_ERR_RATE_LIMIT_STORE", async () => {
    const dead = redisRateLimiterStore({ url: "redis://127.0.0.1:1", commandTimeoutMs: 300 });
    const error = await dead.take("k", { capacity: 1, refillPerSecond: 1 }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_RATE_LIMIT_STORE")).toBe(true);
    dead.client.disconnect();
  });

  it("rate-limits two Node hosts as one through the shared store", async () => {
    const agentDir = mkdtempSync(join(tmpdir(), "al-redis-agent-"));
    try {
      mkdirSync(join(agentDir, "channels"));
      writeFileSync(join(agentDir, "agent.ts"), 'import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "redis-agent", model: "scripted:unused" });\n');
      writeFileSync(join(agentDir, "channels/message.ts"), 'import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/message" });\n');
      const bundle = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
      const rateLimit = { store: shared, limits: { "run-create": { capacity: 2, refillPerSecond: 0.01 } }, keyFor: () => "both-hosts" };
      const boot = () =>
        listenNodeRuntime({ ...bundle, state: new InMemoryStateAdapter(), agentHarness: scriptedHarness({ turns: [{ text: "ok" }] }), port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: {}, rateLimit });
      const [one, two] = await Promise.all([boot(), boot()]);
      const post = (base: string) => fetch(`${base}/message`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"message":"hi"}' }).then((response) => response.status);
      expect([await post(one.url), await post(two.url), await post(one.url), await post(two.url)]).toEqual([202, 202, 429, 429]);
      await Promise.all([one.shutdown(), two.shutdown()]);
    } finally {
      rmSync(agentDir, { recursive: true, force: true });
    }
  });
});

describe("redisRateLimiterStore options", () => {
  it("refuses options it would ignore or misread, naming them, before connecting", () => {
    const refused = (options: unknown) => {
      try {
        redisRateLimiterStore(options as never);
      } catch (error) {
        expect(isAssemblyLineError(error, "AL_ERR_PLUGIN_OPTIONS"), String(error)).toBe(true);
        return (error as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(options)}`);
    };
    // A typo would put every replica's buckets under the default prefix, shared with other hosts.
    expect(refused({ url, keyprefix: "tenant-a:" })).toContain('unknown option "keyprefix"');
    expect(refused({ url, keyPrefix: 7 })).toContain("keyPrefix must be a string, got number");
    expect(refused({ url, commandTimeoutMs: 0 })).toContain("commandTimeoutMs is 0");
    expect(refused({ url, commandTimeoutMs: "1000" })).toContain("commandTimeoutMs must be a number, got string");
    // A client given is used as built: these would shape nothing.
    const client = new Redis(url, { lazyConnect: true });
    expect(refused({ client, commandTimeoutMs: 500 })).toContain("option commandTimeoutMs is for the store's own connection; with client it would be ignored");
    expect(refused({ client, url })).toContain("option url is for the store's own connection");
    client.disconnect();
  });

  it("refuses a client that is not an ioredis client, naming the option, instead of failing later with a TypeError", () => {
    // Connection options passed as client, where the Redis built from them belongs.
    for (const client of [{}, { host: "127.0.0.1", port: 6379 }]) {
      let error: unknown;
      try {
        redisRateLimiterStore({ client } as never);
      } catch (caught) {
        error = caught;
      }
      expect(isAssemblyLineError(error, "AL_ERR_PLUGIN_OPTIONS"), String(error)).toBe(true);
      expect((error as Error).message).toContain("option client is not an ioredis client");
      expect((error as { fix: string }).fix).toContain("ioredis Redis or Cluster");
    }
  });

  it("refuses a url or REDIS_URL that is not a redis:// or rediss:// address, without showing it", () => {
    const refusal = (options: Record<string, unknown>) => {
      try {
        redisRateLimiterStore(options as never).client.disconnect();
      } catch (error) {
        expect(isAssemblyLineError(error, "AL_ERR_PLUGIN_OPTIONS"), String(error)).toBe(true);
        return (error as Error).message;
      }
      return "accepted";
    };
    // ioredis would read it as host "http" and a socket path, and connect there without a word.
    const http = refusal({ url: "http://:secret-pw@example.com:7000" });
    expect(http).toMatch(/^AL_ERR_PLUGIN_OPTIONS: redisRateLimiterStore\(\): option url is not a redis:\/\/ or rediss:\/\/ URL with a host: its scheme is http:/);
    expect(http).not.toContain("secret-pw");
    expect(refusal({ url: "redis://" })).toMatch(/it names no host/);
    expect(refusal({ env: { REDIS_URL: "https://cache.internal:6379" } })).toMatch(/REDIS_URL is not a redis:\/\/ or rediss:\/\/ URL with a host: its scheme is https:/);
    // One slash: ioredis read the rest as a socket path and dropped TLS.
    for (const text of ["rediss:/:s3cret@cache.internal:6380", "http:/example.com:7000", "redis:default:s3cret@cache.internal:63 79"]) {
      const refused = refusal({ env: { REDIS_URL: text } });
      expect(refused, text).toMatch(/^AL_ERR_PLUGIN_OPTIONS: redisRateLimiterStore\(\): REDIS_URL is not a redis:\/\/ or rediss:\/\/ URL with a host/);
      expect(refused).not.toContain("s3cret");
    }
    // What ioredis reads as it is: a socket path, a bare host:port.
    expect(refusal({ url: "/tmp/redis.sock" })).toBe("accepted");
    expect(refusal({ env: { REDIS_URL: "localhost:6379" } })).toBe("accepted");
    // An empty REDIS_URL is unset: the default address, not whatever ioredis makes of "".
    expect(refusal({ env: { REDIS_URL: "" } })).toBe("accepted");
    expect(refusal({ url: "rediss://:pw@cache.internal:6380/2" })).toBe("accepted");
  });
});

describe("redisRateLimiterStore over TLS", () => {
  it.each(["rediss", "REDISS", "Rediss"])("opens a %s:// URL with a TLS handshake, never sending the password in clear", async (scheme) => {
    // A plain TCP listener: it records the first bytes of each connection and hangs up.
    const first: Buffer[] = [];
    const sockets = new Set<Socket>();
    let received!: () => void;
    const arrived = new Promise<void>((resolve) => (received = resolve));
    const listener = createServer((socket) => {
      sockets.add(socket);
      socket.once("data", (data: Buffer) => {
        first.push(data);
        received();
        socket.destroy();
      });
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const store = redisRateLimiterStore({ url: `${scheme}://:s3cret-pw@127.0.0.1:${(listener.address() as { port: number }).port}`, commandTimeoutMs: 300 });
    try {
      const error = await store.take("k", { capacity: 1, refillPerSecond: 1 }).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_RATE_LIMIT_STORE"), String(error)).toBe(true);
      await arrived;
      for (const data of first) {
        // 0x16 opens a TLS handshake record (the ClientHello); a plain connection would start with AUTH.
        expect(data[0], JSON.stringify(data.toString("latin1"))).toBe(0x16);
        expect(data.toString("latin1")).not.toContain("s3cret-pw");
      }
    } finally {
      store.client.disconnect();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => listener.close(resolve));
    }
  });
});
