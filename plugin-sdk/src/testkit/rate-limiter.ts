import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isAssemblyLineError } from "../errors.js";
import type { RateLimiterStore } from "../infrastructure.js";

/**
 * The RateLimiterStore contract, for every store that claims it (in-process,
 * Redis, ...): a token bucket per key, refilled continuously, never granting
 * more than it holds even under concurrent takes. Times are passed as `now`
 * so the suite is deterministic against shared stores too.
 */
export function describeRateLimiterStoreConformance(name: string, store: () => RateLimiterStore): void {
  describe(`${name}: RateLimiterStore conformance`, () => {
    const key = () => `conformance:${randomUUID()}`;
    const T0 = 1_700_000_000_000;

    it("grants up to capacity, then refuses with the time until a token is back", async () => {
      const k = key();
      const limit = { capacity: 3, refillPerSecond: 2 };
      const decisions = [];
      for (let i = 0; i < 4; i += 1) decisions.push(await store().take(k, { ...limit, now: T0 }));
      expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, true, false]);
      expect(decisions.map((decision) => decision.remaining)).toEqual([2, 1, 0, 0]);
      expect(decisions[3]!.retryAfterMs).toBe(500);
    });

    it("refills continuously at refillPerSecond, never above capacity", async () => {
      const k = key();
      const limit = { capacity: 2, refillPerSecond: 4 };
      await store().take(k, { ...limit, now: T0 });
      await store().take(k, { ...limit, now: T0 });
      expect((await store().take(k, { ...limit, now: T0 + 100 })).allowed).toBe(false);
      expect((await store().take(k, { ...limit, now: T0 + 250 })).allowed).toBe(true);
      // A long pause fills the bucket to capacity, no further.
      const later = await store().take(k, { ...limit, now: T0 + 60_000 });
      expect(later).toMatchObject({ allowed: true, remaining: 1 });
    });

    it("takes `cost` tokens at once, and a refused take consumes nothing", async () => {
      const k = key();
      const limit = { capacity: 5, refillPerSecond: 1 };
      expect(await store().take(k, { ...limit, cost: 4, now: T0 })).toMatchObject({ allowed: true, remaining: 1 });
      const refused = await store().take(k, { ...limit, cost: 3, now: T0 });
      expect(refused).toMatchObject({ allowed: false, remaining: 1, retryAfterMs: 2000 });
      expect(await store().take(k, { ...limit, cost: 1, now: T0 })).toMatchObject({ allowed: true, remaining: 0 });
    });

    it("keeps keys independent", async () => {
      const a = key();
      const b = key();
      const limit = { capacity: 1, refillPerSecond: 1 };
      expect((await store().take(a, { ...limit, now: T0 })).allowed).toBe(true);
      expect((await store().take(a, { ...limit, now: T0 })).allowed).toBe(false);
      expect((await store().take(b, { ...limit, now: T0 })).allowed).toBe(true);
    });

    it("never grants more than capacity to concurrent takes", async () => {
      const k = key();
      const decisions = await Promise.all(Array.from({ length: 50 }, () => store().take(k, { capacity: 10, refillPerSecond: 0.001, now: T0 })));
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(10);
    });

    it("uses the current time when `now` is omitted", async () => {
      const k = key();
      expect((await store().take(k, { capacity: 1, refillPerSecond: 1000 })).allowed).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await store().take(k, { capacity: 1, refillPerSecond: 1000 })).allowed).toBe(true);
    });

    it("refuses a limit that could never be honoured", async () => {
      for (const bad of [
        { capacity: 0, refillPerSecond: 1 },
        { capacity: 1, refillPerSecond: 0 },
        { capacity: 1, refillPerSecond: 1, cost: 2 },
        { capacity: 1, refillPerSecond: 1, cost: 0 },
      ]) {
        const error = await store().take(key(), bad).catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_RATE_LIMIT_CONFIG"), JSON.stringify(bad)).toBe(true);
      }
    });
  });
}
