import { cpSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { definePlugin, isAssemblyLineError, type ChannelModule } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, buildAgent, createKernel, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { listenNodeRuntime, noopLogger } from "../src/index.js";
import { FIXTURE_AGENT, call, captureServer, countingClaimsState, fixtureBundle, signedEvent, startHost, tempDir, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

const completed = (url: string, runId: string) =>
  waitFor(async () => {
    const reply = await call(`${url}/runs/${runId}`);
    return reply.body.run.status === "completed" ? reply.body : undefined;
  }, 10_000, `run ${runId} to complete`);

describe("raw channel routes (the default message fallback)", () => {
  it("answers 202 with the durably queued run, then completes it", async () => {
    const host = await startHost(bundle);
    const reply = await call(`${host.url}/message`, { body: { message: "echo: hi", conversationId: "c1" } });
    expect(reply.status).toBe(202);
    expect(reply.body).toMatchObject({ runId: expect.stringMatching(/^run_/), conversationId: "c1", duplicate: false, run: `/runs/${reply.body.runId}` });
    const details = await completed(host.url, reply.body.runId);
    expect(details.result.response.text).toBe("hello back");
    expect(details.run.input.channel).toMatchObject({ name: "message" });
    expect(host.logger.events("ingress.accepted")).toHaveLength(1);
    // A raw route has no deliver(): its caller reads the reply from the run, so the run owes no delivery.
    expect(details.deliveries).toEqual([]);
    expect(await host.runtime.state.runs.listDeliveries(reply.body.runId)).toEqual([]);
  });

  it("answers 200 with the resting result when the caller waits", async () => {
    const host = await startHost(bundle);
    const reply = await call(`${host.url}/message?wait=10`, { body: { message: "approve: post it" } });
    expect(reply.status).toBe(200);
    expect(reply.body.status).toBe("waiting_approval");
    expect(reply.body.pendingApprovals[0]).toMatchObject({ toolName: "publish", input: { body: "status" } });
  });

  it("starts one run per Idempotency-Key", async () => {
    const host = await startHost(bundle);
    const first = await call(`${host.url}/message`, { body: { message: "echo: once" }, headers: { "idempotency-key": "evt-1" } });
    const second = await call(`${host.url}/message`, { body: { message: "echo: once" }, headers: { "idempotency-key": "evt-1" } });
    expect(first.status).toBe(202);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ runId: first.body.runId, duplicate: true });
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(1);
  });

  it("refuses an Idempotency-Key longer than 255 bytes (400 naming its size) and starts nothing; one of 255 bytes is taken", async () => {
    const host = await startHost(bundle);
    const refused = await call(`${host.url}/message`, { body: { message: "echo: hi" }, headers: { "idempotency-key": "k".repeat(256) } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: "AL_ERR_HTTP_BODY_INVALID", message: "the Idempotency-Key header is 256 bytes; it may be at most 255" });
    expect((await host.runtime.state.runs.listRuns()).runs).toEqual([]);
    const taken = await call(`${host.url}/message`, { body: { message: "echo: hi" }, headers: { "idempotency-key": "k".repeat(255) } });
    expect(taken.status).toBe(202);
  });

  it("refuses an Idempotency-Key reused for another message or conversation (422), and still answers a true retry", async () => {
    const host = await startHost(bundle);
    const first = await call(`${host.url}/message`, { body: { message: "echo: pay invoice 1" }, headers: { "idempotency-key": "k1" } });
    expect(first.status).toBe(202);
    const otherMessage = await call(`${host.url}/message`, { body: { message: "echo: pay invoice 2" }, headers: { "idempotency-key": "k1" } });
    expect(otherMessage.status).toBe(422);
    expect(otherMessage.body.error).toMatchObject({ code: "AL_ERR_IDEMPOTENCY_KEY_REUSED", message: expect.stringContaining("its message differs") });
    const otherConversation = await call(`${host.url}/message`, { body: { message: "echo: pay invoice 1", conversationId: "other" }, headers: { "idempotency-key": "k1" } });
    expect(otherConversation.status).toBe(422);
    expect(otherConversation.body.error.message).toContain("its conversationId differs");
    const retry = await call(`${host.url}/message`, { body: { message: "echo: pay invoice 1" }, headers: { "idempotency-key": "k1" } });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ runId: first.body.runId, duplicate: true });
    const runs = (await host.runtime.state.runs.listRuns()).runs;
    expect(runs.map((run) => run.input.message)).toEqual(["echo: pay invoice 1"]);
    expect(host.logger.events("ingress.rejected").map((entry) => entry.fields)).toMatchObject([
      { reason: "idempotency_key_reused", field: "message" },
      { reason: "idempotency_key_reused", field: "conversationId" },
    ]);
  });

  it("refuses a reused Idempotency-Key on another host of the same store, which holds what the key was used for", async () => {
    const state = new InMemoryStateAdapter();
    const a = await startHost(bundle, { state });
    const b = await startHost(bundle, { state });
    const first = await call(`${a.url}/message`, { body: { message: "echo: once", conversationId: "c1" }, headers: { "idempotency-key": "k2" } });
    expect(first.status).toBe(202);
    const reused = await call(`${b.url}/message`, { body: { message: "echo: twice", conversationId: "c1" }, headers: { "idempotency-key": "k2" } });
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe("AL_ERR_IDEMPOTENCY_KEY_REUSED");
    const retry = await call(`${b.url}/message`, { body: { message: "echo: once", conversationId: "c1" }, headers: { "idempotency-key": "k2" } });
    expect(retry.body).toMatchObject({ runId: first.body.runId, duplicate: true });
  });

  it("refuses a raw route in production without host auth, and never uses the fallback", async () => {
    const host = await startHost(bundle, { devMode: false });
    const reply = await call(`${host.url}/message`, { body: { message: "echo: hi" } });
    expect(reply.status).toBe(403);
    expect(reply.body.error.code).toBe("AL_ERR_HOST_AUTH_REQUIRED");
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(0);
    expect(host.logger.events("security.route_refused")).toHaveLength(1);
    // Provider routes verify themselves and still work.
    const event = signedEvent({ type: "message", id: "p-1", conversation: "c", text: "echo: hi" });
    expect((await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers })).status).toBe(202);
  });

  it("serves a raw route in production to callers with the bearer token", async () => {
    const host = await startHost(bundle, { devMode: false, env: { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_BEARER_TOKEN: "tok-1" } });
    expect((await call(`${host.url}/message`, { body: { message: "echo: hi" } })).status).toBe(401);
    const wrong = await call(`${host.url}/message`, { body: { message: "echo: hi" }, headers: { authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const right = await call(`${host.url}/message`, { body: { message: "echo: hi" }, headers: { authorization: "Bearer tok-1" } });
    expect(right.status).toBe(202);
  });

  it("lets a host auth policy admit requests without a token", async () => {
    const host = await startHost(bundle, { devMode: false, auth: { authorize: (request) => request.headers["x-tenant"] === "acme" } });
    expect((await call(`${host.url}/message`, { body: { message: "echo: hi" } })).status).toBe(401);
    expect((await call(`${host.url}/message`, { body: { message: "echo: hi" }, headers: { "x-tenant": "acme" } })).status).toBe(202);
  });
});

describe("provider channels (normalizeHttp and deliver)", () => {
  it("normalizes a signed event, runs it, and delivers the reply through the channel once", async () => {
    const provider = await captureServer();
    process.env.FIXTURE_DELIVERY_URL = provider.url;
    onTestFinished(() => {
      delete process.env.FIXTURE_DELIVERY_URL;
    });
    const host = await startHost(bundle, { outbox: { pollIntervalMs: 20 } });
    const event = signedEvent({ type: "message", id: "evt-42", conversation: "conv-7", text: "echo: hello" });
    const reply = await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    expect(reply.status).toBe(202);
    await waitFor(() => provider.requests.length > 0 || undefined, 10_000, "the delivery");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(provider.requests).toHaveLength(1);
    expect(JSON.parse(provider.requests[0]!.body)).toMatchObject({
      conversationId: "conv-7",
      runId: reply.body.runId,
      text: "hello back",
      metadata: { eventId: "evt-42", thread: "thread-conv-7", user: { id: "u1", name: "Provider User" } },
    });
    const [delivery] = await host.runtime.state.runs.listDeliveries(reply.body.runId);
    expect(delivery).toMatchObject({ status: "delivered", attempts: 1, channel: "provider" });
    expect((await call(`${host.url}/runs/${reply.body.runId}`)).body.deliveries).toMatchObject([{ id: `dlv_${reply.body.runId}`, channel: "provider", status: "delivered" }]);
    // The same provider event again starts nothing new.
    const again = await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    expect(again.body).toMatchObject({ runId: reply.body.runId, duplicate: true });
  });

  it("acknowledges a ping without starting a run", async () => {
    const host = await startHost(bundle);
    const event = signedEvent({ type: "ping" });
    const reply = await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    expect(reply).toMatchObject({ status: 200, body: { pong: true } });
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(0);
  });

  it("answers the status a refusing normalizeHttp declares, with a JSON error", async () => {
    const host = await startHost(bundle);
    const event = signedEvent({ type: "message", id: "x", conversation: "c", text: "hi" }, "wrong-secret");
    const reply = await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    expect(reply.status).toBe(401);
    expect(reply.body.error).toMatchObject({ code: "AL_ERR_CHANNEL_REJECTED", message: expect.stringContaining("bad signature") });
    expect(host.logger.events("security.channel_rejected")).toHaveLength(1);
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(0);
  });

  it("answers a normalizeHttp that fails, rather than refusing, with a 500 that shows nothing of the error", async () => {
    const host = await startHost(bundle);
    // The fixture's /other channel reads body.id: an empty body makes it throw a TypeError, not a refusal.
    const reply = await call(`${host.url}/other`, { raw: "", headers: { "content-type": "application/json" } });
    expect(reply.status).toBe(500);
    expect(reply.body.error).toMatchObject({ code: "AL_ERR_HOST_INTERNAL", message: "the endpoint failed unexpectedly" });
    expect(JSON.stringify(reply.body)).not.toMatch(/Cannot read|properties|\.js/);
    expect(host.logger.events("http.failed").map((entry) => String(entry.fields.err))).toEqual([expect.stringContaining("Cannot read properties of undefined")]);
    expect(host.logger.events("security.channel_rejected")).toHaveLength(0);
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(0);
  });

  it("retries a failed delivery with backoff and delivers it exactly once", async () => {
    const provider = await captureServer(({ index }) => ({ status: index < 2 ? 503 : 200 }));
    process.env.FIXTURE_DELIVERY_URL = provider.url;
    onTestFinished(() => {
      delete process.env.FIXTURE_DELIVERY_URL;
    });
    const host = await startHost(bundle, { outbox: { pollIntervalMs: 20, baseDelayMs: 60 } });
    const event = signedEvent({ type: "message", id: "evt-retry", conversation: "c", text: "echo: x" });
    const { body } = await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    const delivery = await waitFor(async () => {
      const [record] = await host.runtime.state.runs.listDeliveries(body.runId);
      return record?.status === "delivered" ? record : undefined;
    }, 10_000, "the delivery to succeed");
    expect(delivery.attempts).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(provider.requests.map((request) => request.status)).toEqual([503, 503, 200]);
    const failures = host.logger.events("delivery.failed");
    expect(failures).toHaveLength(2);
    expect(failures.every((entry) => (entry.fields.retryInMs as number) >= 30)).toBe(true);
  });

  it("fails a delivery for good after maxAttempts", async () => {
    const provider = await captureServer(() => ({ status: 500 }));
    process.env.FIXTURE_DELIVERY_URL = provider.url;
    onTestFinished(() => {
      delete process.env.FIXTURE_DELIVERY_URL;
    });
    const host = await startHost(bundle, { outbox: { pollIntervalMs: 20, baseDelayMs: 20, maxAttempts: 2 } });
    const event = signedEvent({ type: "message", id: "evt-dead", conversation: "c", text: "echo: x" });
    const { body } = await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    const delivery = await waitFor(async () => {
      const [record] = await host.runtime.state.runs.listDeliveries(body.runId);
      return record?.status === "failed" ? record : undefined;
    }, 10_000, "the delivery to fail");
    expect(delivery).toMatchObject({ attempts: 2, lastError: "provider answered 500" });
    expect(host.logger.events("delivery.failed").at(-1)!.fields.final).toBe(true);
  });
});

describe("channel ingress secrets", () => {
  const boot = (env: Record<string, string>, devMode: boolean) =>
    listenNodeRuntime({ ...bundle, state: new InMemoryStateAdapter(), port: 0, host: "127.0.0.1", devMode, logger: noopLogger(), env });
  /** Run with the fixture's secrets in process.env, where its channel module reads them, set to `secrets` only. */
  const withProcessSecrets = async <T>(secrets: Record<string, string>, work: () => Promise<T>): Promise<T> => {
    const names = ["FIXTURE_SECRET", "FIXTURE_SECRET_A", "FIXTURE_SECRET_B"];
    const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    for (const name of names) delete process.env[name];
    Object.assign(process.env, secrets);
    try {
      return await work();
    } finally {
      for (const name of names) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  };

  it("refuses production boot until one requiredSecretEnv group is fully set where channel modules read it", async () => {
    const refused = await withProcessSecrets({}, () => boot({}, false).catch((error: unknown) => error));
    expect(isAssemblyLineError(refused, "AL_ERR_CHANNEL_SECRET_ENV")).toBe(true);
    expect((refused as Error).message).toMatch(/provider \(channels\/provider\.ts\) needs one of: FIXTURE_SECRET \| FIXTURE_SECRET_A \+ FIXTURE_SECRET_B/);
    const half = await withProcessSecrets({ FIXTURE_SECRET_A: "a" }, () => boot({}, false).catch((error: unknown) => error));
    expect(isAssemblyLineError(half, "AL_ERR_CHANNEL_SECRET_ENV")).toBe(true);
    const whole = await withProcessSecrets({ FIXTURE_SECRET_A: "a", FIXTURE_SECRET_B: "b" }, () => boot({}, false));
    await whole.shutdown();
  });

  it("refuses production boot with a channel secret only in the host's env option, which channel modules do not read", async () => {
    const refused = await withProcessSecrets({}, () => boot({ FIXTURE_SECRET: "s3cret" }, false).catch((error: unknown) => error));
    expect(isAssemblyLineError(refused, "AL_ERR_CHANNEL_SECRET_ENV"), String(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/in the process environment \(it is set in the host's env option, which channel modules do not read\)/);
  });

  it("only warns in dev mode", async () => {
    const host = await withProcessSecrets({}, () => startHost(bundle, { env: {} }));
    expect(host.logger.events("security.channel_secret_missing")).toHaveLength(1);
  });

  it.each([
    // An empty group is met with nothing set: production would boot with the channel's webhook open.
    ["an empty group", [[]], "[[]]"],
    // A flat list of names, the groups' brackets forgotten.
    ["a flat list of names", ["HOOK_SECRET"], '["HOOK_SECRET"]'],
    ["a name that is not an env variable's", [["hook-secret"]], '[["hook-secret"]]'],
  ])("refuses a plugin channel whose ingress.requiredSecretEnv is %s, naming the channel, as the build refuses an authored one", async (_label, requiredSecretEnv, shown) => {
    const hook = { config: { transport: "http", route: "/hook", methods: ["POST"], ingress: { requiredSecretEnv } }, normalizeHttp: () => ({ ack: true }) } as unknown as ChannelModule;
    let closed = false;
    const state = Object.assign(new InMemoryStateAdapter(), { close: async () => void (closed = true) });
    const kernel = await createKernel({
      plugins: [definePlugin({ name: "hook-channel", version: "1.0.0", apply: (k) => k.hooks.channel.tap("hook-channel", (channels) => channels.set("/hook", hook)) })],
    });
    const refused = await withProcessSecrets({ FIXTURE_SECRET: "s3cret" }, () =>
      listenNodeRuntime({ ...bundle, kernel, state, port: 0, host: "127.0.0.1", devMode: false, logger: noopLogger(), env: {} }).catch((error: unknown) => error),
    );
    expect(isAssemblyLineError(refused, "AL_ERR_CHANNEL_DEFINITION"), String(refused)).toBe(true);
    expect((refused as Error).message).toContain(`channel hook (route /hook, registered through hooks.channel) has ingress.requiredSecretEnv ${shown}, which is not any-of groups of env variable names`);
    expect(closed).toBe(true);
  });

  it("refuses a channel whose route the host serves itself", async () => {
    const dir = tempDir();
    const agentDir = join(dir, "agent");
    cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
    writeFileSync(join(agentDir, "channels/inspect.ts"), 'import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/runs/latest" });\n');
    const clashing = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
    const refused = await listenNodeRuntime({ ...clashing, port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: {} }).catch((error: unknown) => error);
    expect(isAssemblyLineError(refused, "AL_ERR_CHANNEL_DEFINITION")).toBe(true);
    expect((refused as Error).message).toMatch(/route \/runs\/latest, which the host serves itself/);
  });

  it("refuses at build two channels whose routes differ only by a trailing slash, naming the other channel", async () => {
    const agentDir = join(tempDir("al-host-twin-route-"), "agent");
    cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
    writeFileSync(join(agentDir, "channels/twin.ts"), 'import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/message/", methods: ["POST"] });\n');
    const refused = await buildAgent(agentDir).catch((error: unknown) => error);
    expect(isAssemblyLineError(refused, "AL_ERR_CHANNEL_DEFINITION")).toBe(true);
    expect((refused as Error).message).toContain("channels/twin.ts: route /message/ (routed as /message) is also served by channels/message.ts as /message");
  });

  it("refuses a plugin's channel on an agent channel's routed path, naming both channels rather than the host's own paths", async () => {
    const twin: ChannelModule = { config: { transport: "http", route: "/message/", methods: ["POST"] }, normalizeHttp: () => ({ eventId: "e", conversationId: "c", message: "hi" }) };
    let closed = false;
    const state = Object.assign(new InMemoryStateAdapter(), { close: async () => void (closed = true) });
    const kernel = await createKernel({
      plugins: [definePlugin({ name: "twin-channel", version: "1.0.0", apply: (k) => k.hooks.channel.tap("twin-channel", (channels) => channels.set("/message/", twin)) })],
    });
    const refused = await startHost(bundle, { kernel, state }).catch((error: unknown) => error);
    expect(isAssemblyLineError(refused, "AL_ERR_CHANNEL_DEFINITION")).toBe(true);
    expect((refused as Error).message).toContain("channels message (route /message) and message- (route /message/) are both routed at /message");
    // The runtime it had started is closed with the refusal.
    expect(closed).toBe(true);
  });
});

describe("the outbox of a host whose channels have no deliver()", () => {
  it("is not woken by completions, which owe nothing: no claim per run", async () => {
    const agentDir = join(tempDir("al-host-raw-only-"), "agent");
    cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
    rmSync(join(agentDir, "channels/provider.ts"));
    const rawOnly = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
    const { state, claims } = countingClaimsState();
    const host = await startHost(rawOnly, { state, outbox: { pollIntervalMs: 60_000 } });
    await waitFor(() => claims() > 0 || undefined, 5_000, "the outbox's first claim at start");
    const atStart = claims();
    for (let i = 0; i < 5; i += 1) {
      const reply = await call(`${host.url}/message?wait=10`, { body: { message: "echo: hi" } });
      expect(reply.body).toMatchObject({ status: "completed" });
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    expect(claims()).toBe(atStart);
  });
});
