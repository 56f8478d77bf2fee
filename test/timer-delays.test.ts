import { describe, expect, it } from "vitest";
import { MAX_TIMER_MS, isTimerDelay } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { DockerDeployTarget, DockerSandboxAdapter } from "@assemblyline-agents/docker";
import { ModalSandboxAdapter } from "@assemblyline-agents/modal";
import { E2bSandboxAdapter } from "@assemblyline-agents/e2b";
import { DaytonaSandboxAdapter } from "@assemblyline-agents/daytona";
import { LocalSandboxAdapter, LocalScheduler } from "@assemblyline-agents/local";
import { RedisRateLimiterStore } from "@assemblyline-agents/redis";
import { S3BlobStore } from "@assemblyline-agents/s3";
import { createOtlpSinkFromEnv } from "@assemblyline-agents/otlp";
import { createConnections } from "@assemblyline-agents/connections";

/**
 * Node's timers wait at most 2^31 - 1 ms: a longer delay (Infinity, "no timeout", included) fires
 * at once, so a timeout that long would fail every command or call as it starts, and a poll or
 * heartbeat that long would run in a loop. Every option that becomes a timer's delay refuses it,
 * naming itself.
 */
const TOO_LONG = [MAX_TIMER_MS + 1, 3e9, Number.POSITIVE_INFINITY];
const S3_ENV = { S3_BUCKET: "b", AWS_ACCESS_KEY_ID: "AK", AWS_SECRET_ACCESS_KEY: "SK" };

const makers: Array<[string, (delay: number) => unknown]> = [
  ["docker defaultTimeoutMs", (delay) => new DockerSandboxAdapter({ image: "busybox", defaultTimeoutMs: delay })],
  ["docker engineTimeoutMs", (delay) => new DockerSandboxAdapter({ image: "busybox", engineTimeoutMs: delay })],
  ["docker deploy readyTimeoutMs", (delay) => new DockerDeployTarget({ readyTimeoutMs: delay })],
  ["modal defaultTimeoutMs", (delay) => new ModalSandboxAdapter({ defaultTimeoutMs: delay })],
  ["modal requestTimeoutMs", (delay) => new ModalSandboxAdapter({ requestTimeoutMs: delay })],
  ["e2b defaultTimeoutMs", (delay) => new E2bSandboxAdapter({ defaultTimeoutMs: delay })],
  ["daytona requestTimeoutMs", (delay) => new DaytonaSandboxAdapter({ requestTimeoutMs: delay })],
  ["daytona createTimeoutMs", (delay) => new DaytonaSandboxAdapter({ createTimeoutMs: delay })],
  ["local sandbox defaultTimeoutMs", (delay) => new LocalSandboxAdapter({ defaultTimeoutMs: delay })],
  ["local scheduler pollIntervalMs", (delay) => new LocalScheduler({ store: new InMemoryStateAdapter(), pollIntervalMs: delay })],
  ["local scheduler leaseMs", (delay) => new LocalScheduler({ store: new InMemoryStateAdapter(), leaseMs: delay })],
  ["redis commandTimeoutMs", (delay) => new RedisRateLimiterStore({ url: "redis://127.0.0.1:1", commandTimeoutMs: delay })],
  ["s3 requestTimeoutMs", (delay) => new S3BlobStore({ requestTimeoutMs: delay, env: S3_ENV })],
  ["connections requestTimeoutMs", (delay) => createConnections({ requestTimeoutMs: delay })],
];

describe("timeouts, polls and leases longer than a timer waits", () => {
  for (const [option, make] of makers) {
    it(`are refused: ${option}`, () => {
      const name = option.split(" ").at(-1)!;
      for (const delay of TOO_LONG) expect(() => make(delay), `${option} = ${delay}`).toThrow(new RegExp(name));
    });
  }

  it("are refused from OTEL_EXPORTER_OTLP_TIMEOUT, naming the variable", () => {
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_TIMEOUT: "3000000000" })).toThrow(/OTEL_EXPORTER_OTLP_TIMEOUT is "3000000000", not a whole number of milliseconds from 1 to 2147483647/);
  });

  it("the longest a timer waits is accepted", () => {
    expect(isTimerDelay(MAX_TIMER_MS)).toBe(true);
    expect(isTimerDelay(MAX_TIMER_MS + 1)).toBe(false);
    expect(isTimerDelay(Number.NaN)).toBe(false);
    const redis = new RedisRateLimiterStore({ url: "redis://127.0.0.1:1", commandTimeoutMs: MAX_TIMER_MS });
    redis.client.disconnect();
    for (const [option, make] of makers.filter(([option]) => !option.startsWith("redis"))) expect(() => make(MAX_TIMER_MS), option).not.toThrow();
  });
});

describe("a command under the longest timeout", () => {
  it("runs to its end instead of timing out as it starts", async () => {
    const adapter = new LocalSandboxAdapter({ defaultTimeoutMs: MAX_TIMER_MS });
    const sandbox = await adapter.acquire(`timer-${process.pid}`);
    try {
      const result = await sandbox.exec("sleep 0.2; echo done");
      expect(result).toMatchObject({ exitCode: 0, stdout: "done\n" });
    } finally {
      await adapter.release?.(`timer-${process.pid}`);
    }
  });
});
