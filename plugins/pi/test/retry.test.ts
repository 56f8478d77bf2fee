import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { backoffDelay, parseRetryAfter, retryTransientFailures, watchProviderResponse } from "../src/index.js";

describe("parseRetryAfter", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");

  it("reads delay-seconds", () => {
    expect(parseRetryAfter({ "retry-after": "3" }, now)).toBe(3000);
  });

  it("reads an HTTP date relative to now", () => {
    expect(parseRetryAfter({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }, now)).toBe(5000);
    expect(parseRetryAfter({ "retry-after": "Wed, 31 Dec 2025 23:59:00 GMT" }, now)).toBe(0);
  });

  it("prefers retry-after-ms", () => {
    expect(parseRetryAfter({ "retry-after-ms": "250", "retry-after": "3" }, now)).toBe(250);
  });

  it("ignores what it cannot read", () => {
    expect(parseRetryAfter({ "retry-after": "soon" }, now)).toBeUndefined();
    expect(parseRetryAfter({}, now)).toBeUndefined();
  });
});

describe("retryTransientFailures", () => {
  const transient = { classify: (error: unknown) => ({ retryable: true, error, ...((error as { retryAfterMs?: number }).retryAfterMs !== undefined ? { retryAfterMs: (error as { retryAfterMs: number }).retryAfterMs } : {}) }) };

  it("backs off exponentially with jitter", () => {
    for (let attempt = 1; attempt <= 4; attempt += 1) {
      const delay = backoffDelay(attempt, 100);
      expect(delay).toBeGreaterThanOrEqual(50 * 2 ** (attempt - 1));
      expect(delay).toBeLessThanOrEqual(100 * 2 ** (attempt - 1));
    }
  });

  it("caps a server's long retry-after at maxDelayMs", async () => {
    const delays: number[] = [];
    let calls = 0;
    const value = await retryTransientFailures(
      async () => {
        calls += 1;
        if (calls === 1) throw Object.assign(new Error("429"), { retryAfterMs: 120_000 });
        return "ok";
      },
      { ...transient, onRetry: ({ delayMs }) => delays.push(delayMs) },
      { maxDelayMs: 20 },
      new AbortController().signal,
    );
    expect(value).toBe("ok");
    expect(delays).toEqual([20]);
  });

  it("gives up after maxRetries and rethrows the last failure", async () => {
    let calls = 0;
    const attempt = async (): Promise<never> => {
      calls += 1;
      throw new Error(`failure ${calls}`);
    };
    await expect(retryTransientFailures(attempt, transient, { maxRetries: 2, initialDelayMs: 1 }, new AbortController().signal)).rejects.toThrow("failure 3");
    expect(calls).toBe(3);
  });

  it("does not retry what classify calls final", async () => {
    let calls = 0;
    const attempt = async (): Promise<never> => {
      calls += 1;
      throw new Error("400");
    };
    await expect(retryTransientFailures(attempt, { classify: (error) => ({ retryable: false, error }) }, {}, new AbortController().signal)).rejects.toThrow("400");
    expect(calls).toBe(1);
  });

  it("stops waiting as soon as the signal aborts", async () => {
    const controller = new AbortController();
    const started = Date.now();
    const pending = retryTransientFailures(
      async () => {
        throw Object.assign(new Error("503"), { retryAfterMs: 10_000 });
      },
      transient,
      {},
      controller.signal,
    );
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe("watchProviderResponse", () => {
  it("reports each concurrent call's own response, even over shared keep-alive sockets", async () => {
    const server = createServer((req, res) => {
      const status = Number(req.url?.slice(1));
      setTimeout(() => {
        res.writeHead(status, { "retry-after": String(status) });
        res.end("x");
      }, 10);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const call = (status: number) => watchProviderResponse(() => fetch(`${origin}/${status}`).then((r) => r.text()));
    try {
      await call(200);
      const results = await Promise.all([call(429), call(503), call(500)]);
      const sequential = await call(404);
      expect(results.map((r) => [r.response?.status, r.response?.headers["retry-after"]])).toEqual([
        [429, "429"],
        [503, "503"],
        [500, "500"],
      ]);
      expect(sequential.response?.status).toBe(404);

      // A call that sends its request only after another call's watch has ended still sees its own response.
      let sendLate!: () => void;
      const gate = new Promise<void>((resolve) => (sendLate = resolve));
      const late = watchProviderResponse(async () => {
        await gate;
        return fetch(`${origin}/429`).then((r) => r.text());
      });
      expect((await call(503)).response?.status).toBe(503);
      sendLate();
      expect((await late).response?.status).toBe(429);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
