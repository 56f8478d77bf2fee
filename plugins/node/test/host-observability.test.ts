import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { definePlugin, type ChannelModule, type ScheduleDispatch, type SchedulerStartOptions, type TelemetrySpan } from "@assemblyline-agents/core";
import { LocalScheduler } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, createKernel, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { readableLogger } from "../src/index.js";
import { call, fixtureBundle, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

describe("structured logs", () => {
  it("log each HTTP request, the ingress lifecycle and security warnings as fields", async () => {
    const host = await startHost(bundle, { maxConcurrentRuns: 1, maxQueuedRuns: 1, env: { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_BEARER_TOKEN: "t" } });
    const auth = { authorization: "Bearer t" };
    const first = await call(`${host.url}/message`, { body: { message: "slow: a" }, headers: { ...auth, "idempotency-key": "k1", "x-request-id": "req-123" } });
    expect(first.headers.get("x-request-id")).toBe("req-123");
    await call(`${host.url}/message`, { body: { message: "slow: a" }, headers: { ...auth, "idempotency-key": "k1" } });
    await call(`${host.url}/message`, { body: { message: "slow: b" }, headers: auth });
    await call(`${host.url}/message`, { body: { message: "slow: c" }, headers: auth });
    await call(`${host.url}/runs`, { headers: { authorization: "Bearer nope" } });
    await call(`${host.url}/healthz`, { headers: auth });

    const request = host.logger.events("http.request").find((entry) => entry.fields.requestId === "req-123");
    expect(request).toMatchObject({ level: "info", fields: { method: "POST", path: "/message", status: 202, durationMs: expect.any(Number) } });
    expect(host.logger.events("http.request").find((entry) => entry.fields.path === "/healthz")?.level).toBe("debug");
    expect(host.logger.events("ingress.accepted")[0]!.fields).toMatchObject({ channel: "message", runId: first.body.runId, eventId: "k1", requestId: "req-123" });
    expect(host.logger.events("ingress.duplicate")).toHaveLength(1);
    expect(host.logger.events("ingress.rejected")[0]!.fields).toMatchObject({ reason: "capacity", retryAfterMs: expect.any(Number) });
    expect(host.logger.events("security.unauthorized")[0]).toMatchObject({ level: "warn", fields: { path: "/runs", remoteAddress: "127.0.0.1", tokenPresented: true } });
  });

  it("logs each ingress.rejected reason at the level docs/node-host.md's log table gives it", async () => {
    const host = await startHost(bundle, { maxConcurrentRuns: 1, maxQueuedRuns: 0 });
    expect((await call(`${host.url}/message?wait=10`, { body: { message: "echo: a" }, headers: { "idempotency-key": "k1" } })).body.status).toBe("completed");
    expect((await call(`${host.url}/message`, { body: { message: "echo: b" }, headers: { "idempotency-key": "k1" } })).status).toBe(422);
    expect((await call(`${host.url}/message`, { body: { message: "slow: holds the only slot" } })).status).toBe(202);
    expect((await call(`${host.url}/message`, { body: { message: "echo: no room" } })).status).toBe(429);
    expect((await call(`${host.url}/admin/kill-switch`, { body: { engaged: true } })).status).toBe(200);
    expect((await call(`${host.url}/message`, { body: { message: "echo: switched off" } })).status).toBe(503);
    const limited = await startHost(bundle, { rateLimit: { limits: { "run-create": { capacity: 1, refillPerSecond: 1e-300 } } } });
    await call(`${limited.url}/message`, { body: { message: "echo: one" } });
    expect((await call(`${limited.url}/message`, { body: { message: "echo: two" } })).status).toBe(429);

    const rejected = [...host.logger.events("ingress.rejected"), ...limited.logger.events("ingress.rejected")];
    expect(rejected.map((entry) => entry.fields.reason).sort()).toEqual(["capacity", "idempotency_key_reused", "kill_switch", "rate_limit"]);
    const docs = readFileSync(resolve(import.meta.dirname, "../../../docs/node-host.md"), "utf8");
    const row = docs.split("\n").find((line) => line.startsWith("| `ingress.rejected` |"));
    for (const entry of rejected) {
      // A reason is listed with the level it is logged at after it: "`capacity`, ... (info)".
      const documented = new RegExp(`\`${entry.fields.reason}\`[^(]*\\((\\w+)`).exec(row ?? "")?.[1];
      expect({ reason: entry.fields.reason, level: documented }).toEqual({ reason: entry.fields.reason, level: entry.level });
    }
  });

  it("print readable dev lines at the chosen level", () => {
    const lines: string[] = [];
    const logger = readableLogger((line) => lines.push(line), "warn");
    logger.info({ event: "ingress.accepted" }, "hidden");
    logger.warn({ event: "security.open_route", route: "/message", detail: { a: 1 } }, "open route");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d WARN  open route \[security\.open_route\]  route=\/message detail=\{"a":1\}$/);
    expect(() => readableLogger(() => undefined, "verbose")).toThrow(/ASSEMBLY_LINE_LOG_LEVEL=verbose/);
  });
});

describe("host integrations", () => {
  it("exports the run's spans to the telemetry sinks, never raw events or bodies (captureContent usage)", async () => {
    const exported: TelemetrySpan[] = [];
    const host = await startHost(bundle, { telemetry: { export: (span) => void exported.push(span) } });
    const { body } = await call(`${host.url}/message?wait=10`, { body: { message: "echo: hi" } });
    const spans = exported.filter((span) => span.attributes["assembly_line.run.id"] === body.runId);
    expect(spans.at(-1)?.attributes["gen_ai.operation.name"]).toBe("invoke_agent");
    expect(spans.every((span) => /^[0-9a-f]{32}$/.test(span.traceId) && /^[0-9a-f]{16}$/.test(span.spanId))).toBe(true);
    expect(JSON.stringify(spans)).not.toContain("echo: hi");
  });

  it("serves channel modules a plugin registers through hooks.channel", async () => {
    const pluginChannel: ChannelModule = {
      config: { transport: "http", route: "/plugin-hook", methods: ["POST"] },
      normalizeHttp: (request) => ({ eventId: String((request.body as { id: string }).id), conversationId: "p", message: "echo: from plugin" }),
    };
    const kernel = await createKernel({
      plugins: [definePlugin({ name: "hook-channel", version: "1.0.0", apply: (k) => k.hooks.channel.tap("hook-channel", (channels) => channels.set("/plugin-hook", pluginChannel)) })],
    });
    const host = await startHost(bundle, { kernel });
    const reply = await call(`${host.url}/plugin-hook?wait=10`, { body: { id: "e1" } });
    expect(reply.body).toMatchObject({ status: "completed", response: { text: "hello back" } });
    expect((await host.runtime.state.runs.getRun(reply.body.runId))?.input.channel?.name).toBe("plugin-hook");
  });

  it("refuses to start when two channel routes would get one channel name, instead of one silently taking the other's replies", async () => {
    const channel = (message: string): ChannelModule => ({
      config: { transport: "http", route: "/unused", methods: ["POST"] },
      normalizeHttp: (request) => ({ eventId: String((request.body as { id: string }).id), conversationId: "p", message }),
    });
    const kernel = await createKernel({
      plugins: [
        definePlugin({
          name: "two-routes",
          version: "1.0.0",
          apply: (k) => k.hooks.channel.tap("two-routes", (channels) => channels.set("/team/inbox", channel("echo: one")).set("/team-inbox", channel("echo: two"))),
        }),
      ],
    });
    const failure = await startHost(bundle, { kernel }).then(() => undefined, (error: unknown) => error);
    expect(failure).toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining('/team/inbox and /team-inbox both get the channel name "team-inbox"') });
  });

  it("turns a due schedule into one mailbox run per due time", async () => {
    let dispatch: ScheduleDispatch | undefined;
    const host = await startHost(bundle, { scheduler: { start: async (fn) => void (dispatch = fn), stop: async () => undefined } });
    await host.runtime.state.schedules.upsertSchedule({ id: "daily", intervalMs: 86_400_000, nextRunAt: "2030-01-01T00:00:00.000Z", payload: { message: "echo: scheduled", conversationId: "sched" }, enabled: true });
    // Each dispatch hands over the row, as a scheduler hands over the schedule it claimed.
    const due = (await host.runtime.state.schedules.getSchedule("daily"))!;
    await dispatch!("daily", due);
    await dispatch!("daily", due);
    const runs = await waitFor(async () => {
      const page = await host.runtime.state.runs.listRuns({ conversationId: "sched" });
      return page.runs.length === 1 && page.runs[0]!.status === "completed" ? page.runs : undefined;
    });
    expect(runs[0]!.input.message).toBe("echo: scheduled");
  });

  it("hands its scheduler the host's logger and automationCatchUpMs, so a failing dispatch is logged and a lease too long refused", async () => {
    let given: SchedulerStartOptions | undefined;
    const host = await startHost(bundle, { automationCatchUpMs: 90_000, scheduler: { start: async (_fn, options) => void (given = options), stop: async () => undefined } });
    expect(given).toMatchObject({ agentId: host.runtime.manifest.agent.id, automationCatchUpMs: 90_000 });
    given!.logger!.warn({ event: "schedule.dispatch_failed" }, "schedule dispatch failed");
    expect(host.logger.entries.some((entry) => entry.msg === "schedule dispatch failed")).toBe(true);
  });

  it("does not start with the local scheduler leasing for the catch-up window or longer", async () => {
    const state = new InMemoryStateAdapter();
    const failure = await startHost(bundle, { state, automationCatchUpMs: 60_000, scheduler: new LocalScheduler({ store: state, leaseMs: 60_000 }) }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toMatchObject({ code: "AL_ERR_SCHEDULER_CONFIG" });
  });

  it("stops what it started when its scheduler refuses to start, and says why", async () => {
    const state = new InMemoryStateAdapter();
    let stopped = false;
    const scheduler = { start: async () => Promise.reject(new Error("scheduler refused")), stop: async () => void (stopped = true) };
    const failure = await startHost(bundle, { state, scheduler }).then(() => undefined, (error: unknown) => error);
    expect(String(failure)).toContain("scheduler refused");
    expect(stopped).toBe(true);
  });
});
