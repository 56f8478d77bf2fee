import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { isAssemblyLineError, type AgentHarness } from "@assemblyline-agents/core";
import { LocalBlobStore } from "@assemblyline-agents/local";
import { listenNodeRuntime, type NodeRuntimeHandle, type NodeRuntimeOptions } from "@assemblyline-agents/node";
import { InMemoryStateAdapter, createKernel, scriptedHarness, type ModelScript, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { FAILURE_REPLY, discordPlugin } from "../src/index.js";
import { FakeDiscordApi, discordTestKeys, signDiscordBody, slashCommandInteraction, type DiscordTestKeys } from "../src/testkit/index.js";
import { buildFixtureAgent, captureLogger, removeDir, waitFor } from "./support.js";

const ROUTE = "/discord/interactions";
let bundle: RuntimeBundle;
let agentDir: string;
let keys: DiscordTestKeys;
let api: FakeDiscordApi;
const savedEnv = { DISCORD_PUBLIC_KEY: process.env.DISCORD_PUBLIC_KEY, DISCORD_API_BASE_URL: process.env.DISCORD_API_BASE_URL, DISCORD_BOT_TOKEN: process.env.DISCORD_BOT_TOKEN };
const hosts: NodeRuntimeHandle[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  ({ bundle, dir: agentDir } = await buildFixtureAgent());
  keys = discordTestKeys();
  api = await new FakeDiscordApi().start();
  // The channel reads its env per request, as in production.
  process.env.DISCORD_PUBLIC_KEY = keys.publicKeyHex;
  process.env.DISCORD_API_BASE_URL = api.apiBaseUrl;
  // Without a bot token unless a test sets one: replies go through the interaction's webhook alone.
  delete process.env.DISCORD_BOT_TOKEN;
});

afterEach(async () => {
  await Promise.allSettled(hosts.splice(0).map((host) => host.shutdown({ timeoutMs: 2_000 })));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

afterAll(async () => {
  await api?.stop();
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  if (agentDir) removeDir(agentDir);
});

async function startHost(script: ModelScript, options: Partial<NodeRuntimeOptions> = {}) {
  const logger = captureLogger();
  const host = await listenNodeRuntime({
    ...bundle,
    state: new InMemoryStateAdapter(),
    agentHarness: scriptedHarness(script),
    port: 0,
    host: "127.0.0.1",
    devMode: true,
    logger,
    env: { DISCORD_PUBLIC_KEY: keys.publicKeyHex },
    outbox: { pollIntervalMs: 50, baseDelayMs: 50 },
    ...options,
  });
  hosts.push(host);
  return Object.assign(host, { logger });
}

/** POST a body to the interactions route with the given headers. */
async function post(host: NodeRuntimeHandle, body: string, headers: Record<string, string>) {
  const response = await fetch(`${host.url}${ROUTE}`, { method: "POST", headers, body });
  return { status: response.status, body: (await response.json()) as any };
}

function interaction(text: string, extra: Partial<Parameters<typeof slashCommandInteraction>[0]> = {}) {
  const payload = slashCommandInteraction({ channelId: "1100000000000000001", text, ...extra });
  api.registerInteraction(payload.token);
  return { payload, body: JSON.stringify(payload) };
}

const repliesTo = (token: string) => api.received.filter((message) => message.interactionToken === token);

describe("the Discord channel on the Node host", () => {
  it("answers a signed PING with PONG and starts nothing", async () => {
    const host = await startHost({ turns: [{ text: "unused" }] });
    const body = JSON.stringify({ id: "1", application_id: "1000000000000000001", type: 1, token: "t", version: 1 });
    const reply = await post(host, body, signDiscordBody(body, keys.privateKey));
    expect(reply).toEqual({ status: 200, body: { type: 1 } });
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(0);
  });

  it("answers a slash command with a deferred response, then delivers the agent's reply through the follow-up webhook", async () => {
    const host = await startHost({ turns: [{ text: "Pong from the agent." }] });
    const { payload, body } = interaction("ping the agent");
    const reply = await post(host, body, signDiscordBody(body, keys.privateKey));
    expect(reply).toEqual({ status: 200, body: { type: 5 } });
    const delivered = await waitFor(() => repliesTo(payload.token)[0], "the follow-up delivery");
    expect(delivered).toMatchObject({ kind: "edit-original", applicationId: payload.application_id, content: "Pong from the agent.", allowedMentions: { parse: [] } });
    const [run] = (await host.runtime.state.runs.listRuns()).runs;
    expect(run).toMatchObject({ status: "completed", conversationId: "discord:1100000000000000001" });
    expect(run!.input.message).toBe("ping the agent");
    await waitFor(() => host.logger.events("delivery.completed").length === 1, "delivery.completed");
  });

  it("judges an unsigned body by its signature before reading it: malformed JSON unsigned is a logged 401, signed a 400", async () => {
    const host = await startHost({ turns: [{ text: "unused" }] });
    const malformed = '{"type": 2, oops';
    const unsigned = await post(host, malformed, { "content-type": "application/json" });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.error.code).toBe("AL_ERR_CHANNEL_REJECTED");
    expect(host.logger.events("security.channel_rejected")).toHaveLength(1);
    const signed = await post(host, malformed, signDiscordBody(malformed, keys.privateKey));
    expect(signed.status).toBe(400);
    expect(signed.body.error.code).toBe("AL_ERR_HTTP_BODY_INVALID");
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(0);
  });

  it("replaces the deferred response with FAILURE_REPLY when the run fails, showing none of the error", async () => {
    const failing: AgentHarness = { name: "failing", runTurn: async () => Promise.reject(new Error("engine down at 10.0.0.7")) };
    const host = await startHost({ turns: [] }, { agentHarness: failing });
    const { payload, body } = interaction("please answer");
    expect((await post(host, body, signDiscordBody(body, keys.privateKey))).body).toEqual({ type: 5 });
    const told = await waitFor(() => repliesTo(payload.token)[0], "the failure delivery");
    expect(told).toMatchObject({ kind: "edit-original", content: FAILURE_REPLY });
    expect(JSON.stringify(api.received)).not.toContain("10.0.0.7");
    expect((await host.runtime.state.runs.listRuns()).runs[0]?.status).toBe("failed");
  });

  it("keeps the interaction token out of the model's context and the run's metadata, and still replies with it", async () => {
    const contexts: string[] = [];
    const capture: AgentHarness = {
      name: "capture",
      async runTurn(input) {
        contexts.push(JSON.stringify(input.context));
        return { status: "completed", response: { text: "answered" } };
      },
    };
    const host = await startHost({ turns: [] }, { agentHarness: capture });
    const { payload, body } = interaction("what is the time", { token: "interaction-token-that-posts-as-the-bot" });
    expect((await post(host, body, signDiscordBody(body, keys.privateKey))).status).toBe(200);
    await waitFor(() => host.logger.events("delivery.completed").length === 1, "the delivery");
    expect(repliesTo(payload.token).map((message) => message.content)).toEqual(["answered"]);
    expect(contexts).toHaveLength(1);
    expect(contexts[0]).toContain(payload.id);
    expect(contexts[0]).not.toContain(payload.token);
    const [run] = (await host.runtime.state.runs.listRuns()).runs;
    expect(JSON.stringify(run!.input.metadata)).not.toContain(payload.token);
    expect(JSON.stringify(run!.input.channel?.metadata)).not.toContain(payload.token);
  });

  it.each([
    ["a forged signature", (body: string) => ({ body, headers: signDiscordBody(body, discordTestKeys().privateKey) })],
    ["a body changed after signing", (body: string) => ({ body: body.replace("ping", "pwned"), headers: signDiscordBody(body, keys.privateKey) })],
    ["a stale timestamp", (body: string) => ({ body, headers: signDiscordBody(body, keys.privateKey, Math.floor(Date.now() / 1000) - 3600) })],
    ["missing signature headers", (body: string) => ({ body, headers: { "content-type": "application/json" } })],
  ])("refuses %s with 401 and stores nothing", async (_name, variant) => {
    const host = await startHost({ turns: [{ text: "never" }] });
    const forged = variant(interaction("ping the agent").body);
    const reply = await post(host, forged.body, forged.headers);
    expect(reply.status).toBe(401);
    expect(reply.body.error.code).toBe("AL_ERR_CHANNEL_REJECTED");
    expect(JSON.stringify(reply.body)).not.toMatch(/127\.0\.0\.1|at .*\.js/);
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(0);
    expect(host.logger.events("security.channel_rejected")).toHaveLength(1);
  });

  it("answers a malformed public key with a 500 that names nothing of it, and logs why", async () => {
    process.env.DISCORD_PUBLIC_KEY = "not-hex";
    onTestFinished(() => {
      process.env.DISCORD_PUBLIC_KEY = keys.publicKeyHex;
    });
    const host = await startHost({ turns: [{ text: "never" }] });
    const body = interaction("ping the agent").body;
    const reply = await post(host, body, signDiscordBody(body, keys.privateKey));
    expect(reply.status).toBe(500);
    expect(reply.body.error.code).toBe("AL_ERR_HOST_INTERNAL");
    expect(JSON.stringify(reply.body)).not.toMatch(/DISCORD_PUBLIC_KEY|hex|Ed25519/);
    expect(host.logger.events("http.failed").map((entry) => String(entry.fields.err))).toEqual([expect.stringContaining("DISCORD_PUBLIC_KEY")]);
    expect(host.logger.events("security.channel_rejected")).toHaveLength(0);
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(0);
  });

  it("starts one run for a duplicate interaction id and delivers its reply once", async () => {
    const host = await startHost({ turns: [{ text: "only once" }] });
    const { payload, body } = interaction("do it once");
    const first = await post(host, body, signDiscordBody(body, keys.privateKey));
    const second = await post(host, body, signDiscordBody(body, keys.privateKey));
    expect([first, second]).toEqual([
      { status: 200, body: { type: 5 } },
      { status: 200, body: { type: 5 } },
    ]);
    await waitFor(() => host.logger.events("delivery.completed").length === 1, "the delivery");
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(1);
    expect(host.logger.events("ingress.duplicate")).toHaveLength(1);
    expect(repliesTo(payload.token).map((message) => message.content)).toEqual(["only once"]);
  });

  it("splits a reply longer than 2000 characters into the original response and follow-ups", async () => {
    const text = Array.from({ length: 450 }, (_, index) => `line ${index}`).join("\n");
    const host = await startHost({ turns: [{ text }] });
    const { payload, body } = interaction("long answer please");
    expect((await post(host, body, signDiscordBody(body, keys.privateKey))).status).toBe(200);
    await waitFor(() => host.logger.events("delivery.completed").length === 1, "the delivery");
    const messages = repliesTo(payload.token);
    // The original shows the count of follow-ups sent (from 0, before the first, which would otherwise edit the
    // still-loading original), the follow-ups go out, and the original is edited last: its content marks the reply as whole.
    const followups = messages.filter((message) => message.kind === "followup");
    expect(followups.length).toBeGreaterThanOrEqual(1);
    expect(messages.map((message) => message.kind)).toEqual(["edit-original", ...followups.flatMap(() => ["followup", "edit-original"])]);
    for (const message of messages) expect(message.content.length).toBeLessThanOrEqual(2000);
    // The channel shows the original response above its follow-ups, in the reply's order.
    expect(api.messages(payload.token).join("\n")).toBe(text);
  });

  it("waits out a 429 and an exhausted rate-limit bucket before sending again", async () => {
    const text = "x".repeat(1990) + "\n" + "y".repeat(1990) + "\n" + "z".repeat(100);
    const host = await startHost({ turns: [{ text }] });
    const { payload, body } = interaction("rate limited reply");
    api.rateLimitNext(1, 0.3);
    api.exhaustBucketAfterNextFollowup(0.5);
    const before = api.requests.length;
    expect((await post(host, body, signDiscordBody(body, keys.privateKey))).status).toBe(200);
    await waitFor(() => host.logger.events("delivery.completed").length === 1, "the delivery");
    const webhookCalls = api.requests.slice(before).filter((request) => request.path.startsWith("/api/v10/webhooks/"));
    // The local API refuses (and counts) any request sent before its bucket's announced reset.
    // GET the original (429, then 200), the count at 0 in it, two follow-ups (the second waits for its bucket) with
    // the count of the first recorded between them, then the original's final edit.
    expect(webhookCalls.map((request) => `${request.method} ${request.status}`)).toEqual(["GET 429", "GET 200", "PATCH 200", "POST 200", "PATCH 200", "POST 200", "PATCH 200"]);
    expect(api.violations).toEqual([]);
    expect(api.messages(payload.token).join("\n")).toBe(text);
    expect(host.logger.events("delivery.failed")).toHaveLength(0);
  });

  it("retries a delivery Discord refuses, through the outbox", async () => {
    const host = await startHost({ turns: [{ text: "eventually" }] });
    const { payload, body } = interaction("flaky discord");
    api.failNext(1);
    expect((await post(host, body, signDiscordBody(body, keys.privateKey))).status).toBe(200);
    await waitFor(() => host.logger.events("delivery.completed").length === 1, "the retried delivery");
    expect(host.logger.events("delivery.failed")).toHaveLength(1);
    expect(repliesTo(payload.token).map((message) => message.content)).toEqual(["eventually"]);
  });

  it("delivers the reply of a run paused for an approval answered after the interaction's token expired, as the bot's message in the channel", async () => {
    process.env.DISCORD_BOT_TOKEN = api.botToken;
    onTestFinished(() => {
      delete process.env.DISCORD_BOT_TOKEN;
    });
    const host = await startHost({ turns: [{ toolCalls: [{ name: "publish", input: { body: "release notes" } }] }, { text: "Published the release notes." }] });
    const { payload, body } = interaction("publish the release notes", { channelId: "1100000000000000077" });
    expect((await post(host, body, signDiscordBody(body, keys.privateKey))).body).toEqual({ type: 5 });
    const [paused] = await waitFor(async () => {
      const runs = (await host.runtime.state.runs.listRuns()).runs;
      return runs[0]?.status === "waiting_approval" ? runs : undefined;
    }, "the run to wait for its approval");
    // Hours later, as Discord has it: the interaction's token no longer works.
    api.expireInteraction(payload.token);
    await host.runtime.approve(paused!.id, { actor: "test" });
    await waitFor(() => host.logger.events("delivery.completed").length === 1, "the reply's delivery");
    expect(api.channelMessages("1100000000000000077")).toEqual([`<@${payload.member!.user!.id}> Published the release notes.`]);
    expect(api.posted.at(-1)).toMatchObject({ allowedMentions: { parse: [], users: [payload.member!.user!.id] }, enforceNonce: true });
    expect(api.messages(payload.token)).toEqual([]);
    expect(host.logger.events("delivery.failed")).toHaveLength(0);
  });

  it("fails the reply for good, naming DISCORD_BOT_TOKEN, when the token expired and no bot token is set", async () => {
    const host = await startHost({ turns: [{ text: "too late" }] });
    const { payload, body } = interaction("answer later", { channelId: "1100000000000000078" });
    api.expireInteraction(payload.token);
    expect((await post(host, body, signDiscordBody(body, keys.privateKey))).status).toBe(200);
    const [failed] = await waitFor(() => (host.logger.events("delivery.failed").length > 0 ? host.logger.events("delivery.failed") : undefined), "the failed delivery");
    expect(failed!.fields).toMatchObject({ final: true });
    expect(String(failed!.fields.err)).toContain("DISCORD_BOT_TOKEN");
    expect(api.channelMessages("1100000000000000078")).toEqual([]);
  });

  it("downloads a command's attachment from Discord's CDN into the run's files", async () => {
    const blobDir = mkdtempSync(join(tmpdir(), "al-discord-blobs-"));
    dirs.push(blobDir);
    const host = await startHost({ turns: [{ text: "got the file" }] }, { blob: new LocalBlobStore({ directory: blobDir }), attachments: { allowedHosts: ["127.0.0.1"] } });
    const url = api.addAttachment("1200000000000000001", "report.txt", new TextEncoder().encode("quarterly numbers"), "text/plain");
    const { body } = interaction("read this", { attachment: { id: "1200000000000000001", filename: "report.txt", url, contentType: "text/plain", size: 17 } });
    expect((await post(host, body, signDiscordBody(body, keys.privateKey))).status).toBe(200);
    await waitFor(() => host.logger.events("delivery.completed").length === 1, "the run and its delivery");
    const [run] = (await host.runtime.state.runs.listRuns()).runs;
    const events = await host.runtime.state.runs.listEvents(run!.id);
    const stored = events.find((event) => event.type === "attachment.stored");
    expect(stored?.data).toMatchObject({ attachmentId: "1200000000000000001", size: 17, contentType: "text/plain" });
    const record = await host.runtime.state.files.getFileRecord(String(stored!.data.path));
    expect(record?.size).toBe(17);
  });

  it("refuses an attachment whose CDN answer redirects to a host attachmentHosts does not list, fetching nothing there", async () => {
    const blobDir = mkdtempSync(join(tmpdir(), "al-discord-blobs-"));
    dirs.push(blobDir);
    const elsewhere = await listen((_request, response) => response.writeHead(200, { "content-type": "text/plain" }).end("not from Discord"));
    // On 127.0.0.1, the fixture's attachmentHosts; its redirect names localhost, which only the host's own allowlist admits.
    const cdn = await listen((_request, response) => response.writeHead(302, { location: `http://localhost:${elsewhere.port}/payload` }).end());
    const host = await startHost({ turns: [{ text: "got the file" }] }, { blob: new LocalBlobStore({ directory: blobDir }), attachments: { allowedHosts: ["127.0.0.1", "localhost"] } });
    const url = `http://127.0.0.1:${cdn.port}/attachments/1200000000000000002/a.txt`;
    const { body } = interaction("read this", { attachment: { id: "1200000000000000002", filename: "a.txt", url, contentType: "text/plain", size: 16 } });
    expect((await post(host, body, signDiscordBody(body, keys.privateKey))).status).toBe(200);
    await waitFor(() => host.logger.events("delivery.completed").length === 1, "the run and its delivery");
    const [run] = (await host.runtime.state.runs.listRuns()).runs;
    const events = (await host.runtime.state.runs.listEvents(run!.id)).filter((event) => event.type.startsWith("attachment."));
    expect(events).toMatchObject([{ type: "attachment.failed", data: { attachmentId: "1200000000000000002", code: "AL_ERR_ATTACHMENT_REFUSED" } }]);
    expect(String(events[0]!.data.error)).toMatch(/host localhost is not in the policy's withinHosts/);
    expect(cdn.requests).toBe(1);
    expect(elsewhere.requests).toBe(0);
  });

  it("refuses to boot in production without DISCORD_PUBLIC_KEY (requiredSecretEnv)", async () => {
    delete process.env.DISCORD_PUBLIC_KEY;
    onTestFinished(() => {
      process.env.DISCORD_PUBLIC_KEY = keys.publicKeyHex;
    });
    const failure = await listenNodeRuntime({ ...bundle, state: new InMemoryStateAdapter(), port: 0, host: "127.0.0.1", devMode: false, logger: captureLogger(), env: {} }).then(
      (host) => {
        hosts.push(host);
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(isAssemblyLineError(failure, "AL_ERR_CHANNEL_SECRET_ENV"), String(failure)).toBe(true);
    expect(String(failure)).toContain("DISCORD_PUBLIC_KEY");
  });

  it("checks DISCORD_PUBLIC_KEY where the channel reads it: a key only in the host's env option refuses production boot, one in the process serves", async () => {
    const production = { devMode: false, auth: { bearerToken: "t".repeat(40) } } as const;
    delete process.env.DISCORD_PUBLIC_KEY;
    onTestFinished(() => {
      process.env.DISCORD_PUBLIC_KEY = keys.publicKeyHex;
    });
    const refused = await startHost({ turns: [{ text: "never" }] }, { ...production, env: { DISCORD_PUBLIC_KEY: keys.publicKeyHex } }).catch((error: unknown) => error);
    expect(isAssemblyLineError(refused, "AL_ERR_CHANNEL_SECRET_ENV"), String(refused)).toBe(true);
    expect(String(refused)).toMatch(/DISCORD_PUBLIC_KEY in the process environment \(it is set in the host's env option/);

    process.env.DISCORD_PUBLIC_KEY = keys.publicKeyHex;
    const host = await startHost({ turns: [{ text: "served" }] }, { ...production, env: {} });
    const { payload, body } = interaction("is the key read?");
    expect(await post(host, body, signDiscordBody(body, keys.privateKey))).toEqual({ status: 200, body: { type: 5 } });
    await waitFor(() => repliesTo(payload.token)[0], "the reply");
  });

  it("refuses to boot in production a discordPlugin() channel without its public key, as a channels/ file", async () => {
    const kernel = await createKernel({ plugins: [discordPlugin({ route: "/discord/plugin", publicKeyEnv: "PLUGIN_DISCORD_PUBLIC_KEY" })] });
    const boot = (env: Record<string, string>) =>
      listenNodeRuntime({ ...bundle, kernel, state: new InMemoryStateAdapter(), port: 0, host: "127.0.0.1", devMode: false, logger: captureLogger(), env }).then(
        (host) => {
          hosts.push(host);
          return host;
        },
        (error: unknown) => error,
      );
    const failure = await boot({ DISCORD_PUBLIC_KEY: keys.publicKeyHex });
    expect(isAssemblyLineError(failure, "AL_ERR_CHANNEL_SECRET_ENV"), String(failure)).toBe(true);
    expect(String(failure)).toMatch(/discord-plugin \(registered through hooks\.channel\) needs one of: PLUGIN_DISCORD_PUBLIC_KEY/);
    expect(String(failure)).not.toMatch(/channels\/discord\.ts/);
  });
});

/** A local server counting its requests; closed after the test. */
async function listen(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<{ port: number; requests: number }> {
  const server = createServer((request, response) => {
    listening.requests += 1;
    handler(request, response);
  });
  const listening = { port: 0, requests: 0 };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  listening.port = (server.address() as AddressInfo).port;
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return listening;
}
