import { inspect } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { deliveryRetryAfterMs, isAssemblyLineError, isFinalDeliveryFailure } from "@assemblyline-agents/core";
import { DELIVERY_BUDGET_MS, FAILURE_REPLY, defineDiscordChannel } from "../src/index.js";
import { attemptSignal } from "../src/attempt-signal.js";
import { FakeDiscordApi, discordTestKeys, slashCommandInteraction } from "../src/testkit/index.js";

let api: FakeDiscordApi;
const keys = discordTestKeys();

beforeEach(async () => {
  api = await new FakeDiscordApi().start();
});

afterEach(async () => {
  await api.stop();
});

/** A channel as one process has it: its own REST client and what it remembers. */
const process_ = () => defineDiscordChannel({ env: { DISCORD_PUBLIC_KEY: keys.publicKeyHex }, apiBaseUrl: api.apiBaseUrl });

function reply(text: string) {
  const interaction = slashCommandInteraction({ channelId: "1100000000000000001", text: "question" });
  api.registerInteraction(interaction.token);
  // What the Node host hands deliver(): the channel metadata, and the token in the delivery metadata.
  const metadata = {
    discord: { applicationId: interaction.application_id, interactionId: interaction.id, interactionType: 2, channelId: "1100000000000000001", guildId: null },
  };
  const deliveryMetadata = { discord: { interactionToken: interaction.token } };
  return { token: interaction.token, delivery: { deliveryId: "dlv_1", attempt: 1, signal: new AbortController().signal, conversationId: "discord:1100000000000000001", runId: "run_1", text, metadata, deliveryMetadata } };
}

/** A wait Discord may ask for that is longer than a delivery may take. */
const longWaitMs = DELIVERY_BUDGET_MS + 45_000;

const long = ["a".repeat(1990), "b".repeat(1990), "c".repeat(500)].join("\n");
/** `long` as the channel shows it: cut after each newline, which Discord trims off. */
const shown = ["a".repeat(1990), "b".repeat(1990), "c".repeat(500)];

describe("delivering a reply through the interaction's webhook", () => {
  it("sends nothing twice when a long reply cut at newlines is delivered again by another process (a crash before the outbox recorded it)", async () => {
    const { token, delivery } = reply(long);
    await process_().deliver(delivery);
    expect(api.messages(token)).toEqual(shown);
    const before = api.requests.length;
    // The process died after sending, before the outbox marked the delivery done: a new process delivers it again.
    await process_().deliver(delivery);
    expect(api.messages(token)).toEqual(shown);
    expect(api.requests.slice(before).map((request) => request.method)).toEqual(["GET"]);
  });

  it("sends no follow-up twice when another process retries a long reply that a crash cut short after some of its follow-ups", async () => {
    const text = ["a".repeat(1990), "b".repeat(1990), "c".repeat(1990), "d".repeat(100)].join("\n");
    const { token, delivery } = reply(text);
    // The GET and the follow-ups b and c go out; the process dies as it sends d.
    api.failAfter(5);
    const crashed = await process_().deliver(delivery).catch((error: unknown) => error);
    expect(isAssemblyLineError(crashed, "AL_ERR_DISCORD_DELIVERY"), String(crashed)).toBe(true);
    // Another process (nothing of the first in its memory) delivers the reply again.
    await process_().deliver({ ...delivery, attempt: 2 });
    expect(api.messages(token)).toEqual(["a".repeat(1990), "b".repeat(1990), "c".repeat(1990), "d".repeat(100)]);
  });

  it("sends nothing twice when another process delivers again a long reply whose first part Discord stored altered", async () => {
    // A lone surrogate is not Unicode: Discord strips it, so the original never shows the first part exactly as sent.
    const text = ["a".repeat(900) + "\ud83d" + "a".repeat(900), "b".repeat(1990), "c".repeat(100)].join("\n");
    const { token, delivery } = reply(text);
    await process_().deliver(delivery);
    const shownOnce = api.messages(token);
    expect(shownOnce).toHaveLength(3);
    const before = api.requests.length;
    await process_().deliver({ ...delivery, attempt: 2 });
    expect(api.messages(token)).toEqual(shownOnce);
    expect(api.requests.slice(before).map((request) => request.method)).toEqual(["GET"]);
  });

  it("tells the user a run failed in place of the reply, with a fixed message and not the error", async () => {
    const { token, delivery } = reply("unused");
    const { text: _, ...failure } = delivery;
    await process_().deliverFailure({ ...failure, code: "AL_ERR_HARNESS" });
    expect(api.messages(token)).toEqual([FAILURE_REPLY]);
  });

  it("delivers a run queued before the token moved out of the channel metadata", async () => {
    const { token, delivery } = reply("from an older run");
    const { deliveryMetadata: _, ...older } = delivery;
    await process_().deliver({ ...older, metadata: { discord: { ...delivery.metadata.discord, interactionToken: token } } });
    expect(api.messages(token)).toEqual(["from an older run"]);
  });

  it("sends only the missing chunks when a retry in the same process follows a failure half way, even one that kept the count out of the original", async () => {
    const { token, delivery } = reply(long);
    const channel = process_();
    api.failAfter(2); // the GET and the first follow-up pass; recording it in the original gets a 500
    const failure = await channel.deliver(delivery).catch((error: unknown) => error);
    expect(isAssemblyLineError(failure, "AL_ERR_DISCORD_DELIVERY"), String(failure)).toBe(true);
    expect(api.messages(token)).toHaveLength(1);
    await channel.deliver(delivery);
    expect(api.messages(token)).toEqual(shown);
  });

  it("fails at once when Discord asks for a wait longer than a delivery may take, telling the outbox to retry once it is over", async () => {
    const { token, delivery } = reply("short answer");
    api.rateLimitNext(1, longWaitMs / 1000);
    const started = Date.now();
    const failure = await process_().deliver(delivery).catch((error: unknown) => error);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(String(failure)).toMatch(/AL_ERR_DISCORD_DELIVERY.*rate limited/);
    expect(deliveryRetryAfterMs(failure)).toBeGreaterThanOrEqual(longWaitMs - 1_000);
    expect(deliveryRetryAfterMs(failure)).toBeLessThan(longWaitMs + 1_000);
    expect(isFinalDeliveryFailure(failure)).toBe(false);
    expect(api.messages(token)).toEqual([]);
  });

  it("tells the outbox the wait of a 429 that names it only in Retry-After (a shared or Cloudflare limit)", async () => {
    const { token, delivery } = reply("short answer");
    api.rateLimitNext(1, longWaitMs / 1000, { bucketHeaders: false });
    const started = Date.now();
    const failure = await process_().deliver(delivery).catch((error: unknown) => error);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(String(failure)).toMatch(/AL_ERR_DISCORD_DELIVERY.*rate limited/);
    expect(deliveryRetryAfterMs(failure)).toBeGreaterThanOrEqual(longWaitMs - 1_000);
    expect(deliveryRetryAfterMs(failure)).toBeLessThan(longWaitMs + 1_000);
    expect(api.requests).toHaveLength(1);
    expect(api.messages(token)).toEqual([]);
  });

  it("marks a delivery to an interaction Discord does not know (an expired token) as final, and a server error as worth retrying", async () => {
    const { delivery } = reply("hello");
    const expired = { ...delivery, deliveryMetadata: { discord: { interactionToken: "expired-token" } } };
    const refused = await process_().deliver(expired).catch((error: unknown) => error);
    expect(String(refused)).toMatch(/AL_ERR_DISCORD_DELIVERY.*401 \(code 50027\)/);
    expect(isFinalDeliveryFailure(refused)).toBe(true);
    api.failNext(1);
    const failed = await process_().deliver(delivery).catch((error: unknown) => error);
    expect(isAssemblyLineError(failed, "AL_ERR_DISCORD_DELIVERY")).toBe(true);
    expect(isFinalDeliveryFailure(failed)).toBe(false);
    // Discord named no wait: the outbox's own backoff decides.
    expect(deliveryRetryAfterMs(failed)).toBeUndefined();
  });

  it("fails at once, not after the outbox's retries, a reply to a run no Discord interaction started", async () => {
    const { delivery } = reply("to nobody");
    const { metadata: _metadata, deliveryMetadata: _token, ...unaddressed } = delivery;
    const failure = await process_().deliver(unaddressed).catch((error: unknown) => error);
    expect(String(failure)).toMatch(/AL_ERR_DISCORD_DELIVERY.*no Discord interaction/);
    expect(isFinalDeliveryFailure(failure)).toBe(true);
    expect(api.requests).toEqual([]);
  });

  it("stops sending when the host stops waiting for the delivery", async () => {
    const { token, delivery } = reply("late reply");
    const host = new AbortController();
    // Discord asks for a 1 s wait; the host gives up on the attempt during it.
    api.rateLimitNext(1, 1);
    const sending = process_().deliver({ ...delivery, signal: host.signal }).catch((error: unknown) => error);
    const started = Date.now();
    setTimeout(() => host.abort(new Error("deliver() did not settle within 200 ms")), 200);
    expect(String(await sending)).toMatch(/AL_ERR_DISCORD_DELIVERY.*the host stopped waiting/);
    // It settles when the host gives up, not when Discord's wait is over, so the next attempt is not held behind it.
    expect(Date.now() - started).toBeLessThan(600);
    // The wait is over: the attempt the host gave up on sent nothing after it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(api.messages(token)).toEqual([]);
  });

  it("leaves out a piece that would be only whitespace, which Discord refuses as an empty message", async () => {
    const text = `start${" ".repeat(4_500)}end`;
    const { token, delivery } = reply(text);
    await process_().deliver(delivery);
    const sent = api.messages(token);
    expect(sent.every((piece) => piece.trim() !== "")).toBe(true);
    expect(sent.join(" ").replace(/\s+/g, " ")).toBe("start end");
  });

  it("keeps the interaction token out of a failed delivery's error, its cause included", async () => {
    const { token, delivery } = reply("hello");
    api.failNext(1);
    const failure = await process_().deliver(delivery).catch((error: unknown) => error);
    expect(isAssemblyLineError(failure, "AL_ERR_DISCORD_DELIVERY")).toBe(true);
    expect(inspect(failure, { depth: 10 })).not.toContain(token);
    expect(JSON.stringify(failure)).not.toContain(token);
  });
});

describe("a delivery attempt's budget", () => {
  it("runs out on time even when garbage collection runs while the attempt waits", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const attempt = attemptSignal(new AbortController().signal, 100);
    onTestFinished(() => attempt.clear());
    await new Promise((resolve) => setTimeout(resolve, 20));
    gc();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(attempt.signal.aborted).toBe(true);
    expect((attempt.signal.reason as Error).name).toBe("TimeoutError");
  });

  it("ends when the host stops waiting, with the host's reason", () => {
    const host = new AbortController();
    const attempt = attemptSignal(host.signal, 60_000);
    onTestFinished(() => attempt.clear());
    host.abort(new Error("deliver() did not settle within 20000 ms"));
    expect(String(attempt.signal.reason)).toContain("did not settle");
  });
});
