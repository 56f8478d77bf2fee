import { beforeAll, describe, expect, it } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

/** One run-create token per caller, refilled too slowly to matter within a test. */
const ONE_EACH = { limits: { "run-create": { capacity: 1, refillPerSecond: 0.01 } } };
const message = (url: string, forwardedFor?: string) =>
  call(`${url}/message`, { body: { message: "echo: hi" }, headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor } });

describe("trustProxy", () => {
  it("keys callers behind a trusted proxy by the address it forwards, each with a bucket of its own", async () => {
    const host = await startHost(bundle, { trustProxy: "loopback", rateLimit: ONE_EACH });
    expect((await message(host.url, "203.0.113.7")).status).toBe(202);
    expect((await message(host.url, "203.0.113.8")).status).toBe(202);
    expect((await message(host.url, "203.0.113.7")).status).toBe(429);
    // A chain is read from the proxy back: a trusted hop is skipped, the first untrusted address is the client.
    expect((await message(host.url, "198.51.100.1, 203.0.113.8, 127.0.0.1")).status).toBe(429);
  });

  it("believes no header by default, nor one from an address that is not a trusted proxy", async () => {
    const direct = await startHost(bundle, { rateLimit: ONE_EACH });
    expect((await message(direct.url, "203.0.113.7")).status).toBe(202);
    expect((await message(direct.url, "203.0.113.8")).status).toBe(429);
    // The host sees the request come from 127.0.0.1, which is not 10.0.0.0/8: its header is the caller's own say-so.
    const elsewhere = await startHost(bundle, { trustProxy: ["10.0.0.0/8"], rateLimit: ONE_EACH });
    expect((await message(elsewhere.url, "203.0.113.7")).status).toBe(202);
    expect((await message(elsewhere.url, "203.0.113.8")).status).toBe(429);
  });

  it("reads ASSEMBLY_LINE_TRUST_PROXY, which the option wins over", async () => {
    const fromEnv = await startHost(bundle, { env: { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_TRUST_PROXY: "10.0.0.0/8, loopback" }, rateLimit: ONE_EACH });
    expect((await message(fromEnv.url, "203.0.113.7")).status).toBe(202);
    expect((await message(fromEnv.url, "203.0.113.8")).status).toBe(202);
    const option = await startHost(bundle, { env: { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_TRUST_PROXY: "loopback" }, trustProxy: "10.0.0.0/8", rateLimit: ONE_EACH });
    expect((await message(option.url, "203.0.113.7")).status).toBe(202);
    expect((await message(option.url, "203.0.113.8")).status).toBe(429);
  });

  it("refuses an address list it cannot read at start, naming where it was set", async () => {
    await expect(startHost(bundle, { trustProxy: ["10.0.0.0/33"] })).rejects.toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining("trustProxy") });
    await expect(startHost(bundle, { trustProxy: [""] })).rejects.toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining("trustProxy") });
    await expect(startHost(bundle, { env: { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_TRUST_PROXY: "loopback,not-an-ip" } })).rejects.toMatchObject({
      code: "AL_ERR_HOST_CONFIG",
      message: expect.stringContaining("ASSEMBLY_LINE_TRUST_PROXY is not a list of proxy addresses: invalid IP address: not-an-ip"),
    });
  });
});
