import { inspect } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { deliveryRetryAfterMs, isAssemblyLineError, isFinalDeliveryFailure } from "@assemblyline-agents/core";
import { DELIVERY_BUDGET_MS, FAILURE_REPLY, defineDiscordChannel, splitMessage } from "../src/index.js";
import { attemptSignal } from "../src/attempt-signal.js";
import { nonceOf } from "../src/delivery.js";
import { FakeDiscordApi, discordTestKeys, slashCommandInteraction, snowflake } from "../src/testkit/index.js";

let api: FakeDiscordApi;
const keys = discordTestKeys();

beforeEach(async () => {
  api = await new FakeDiscordApi().start();
});

afterEach(async () => {
  await api.stop();
});

/** A channel as one process has it: its own REST client and what it remembers. */
const process_ = (env: Record<string, string> = {}) => defineDiscordChannel({ env: { DISCORD_PUBLIC_KEY: keys.publicKeyHex, ...env }, apiBaseUrl: api.apiBaseUrl });
/** A process with the bot token set. */
const withBot = () => process_({ DISCORD_BOT_TOKEN: api.botToken });

const CHANNEL = "1100000000000000001";
const ASKER = "80351110224678912";

/** A reply to an interaction made `ageMs` ago (a snowflake holds its time). */
function reply(text: string, ageMs = 0, options: { followupLimit?: number } = {}) {
  const createdAt = Date.now() - ageMs;
  const interaction = slashCommandInteraction({ id: snowflake(createdAt), channelId: CHANNEL, text: "question", user: { id: ASKER, username: "nelly" } });
  api.registerInteraction(interaction.token, { createdAt, ...options });
  // What the Node host hands deliver(): the channel metadata, and the token in the delivery metadata.
  const metadata = {
    discord: { applicationId: interaction.application_id, interactionId: interaction.id, interactionType: 2, channelId: CHANNEL, guildId: null, userId: ASKER },
  };
  const deliveryMetadata = { discord: { interactionToken: interaction.token } };
  return { token: interaction.token, delivery: { deliveryId: "dlv_1", attempt: 1, signal: new AbortController().signal, conversationId: "discord:1100000000000000001", runId: "run_1", text, metadata, deliveryMetadata } };
}

/** A wait Discord may ask for that is longer than a delivery may take. */
const longWaitMs = DELIVERY_BUDGET_MS + 45_000;

const long = ["a".repeat(1990), "b".repeat(1990), "c".repeat(500)].join("\n");
/** `long` as the channel shows it: cut after each newline, which Discord trims off. */
const shown = ["a".repeat(1990), "b".repeat(1990), "c".repeat(500)];
/** A long reply whose first chunk still fits one message with the bot's mention before it. */
const roomyShown = ["a".repeat(1900), "b".repeat(1900), "c".repeat(500)];
const roomy = roomyShown.join("\n");

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
    // The GET, the count at 0, and the follow-ups b and c with their counts go out; the process dies as it sends d.
    api.failAfter(6);
    const crashed = await process_().deliver(delivery).catch((error: unknown) => error);
    expect(isAssemblyLineError(crashed, "AL_ERR_DISCORD_DELIVERY"), String(crashed)).toBe(true);
    // Another process (nothing of the first in its memory) delivers the reply again.
    await process_().deliver({ ...delivery, attempt: 2 });
    expect(api.messages(token)).toEqual(["a".repeat(1990), "b".repeat(1990), "c".repeat(1990), "d".repeat(100)]);
  });

  it("shows every part of a long reply once, in order, though Discord makes a follow-up to a still-loading response an edit of it", async () => {
    for (const parts of [shown.slice(0, 2), shown]) {
      const { token, delivery } = reply(parts.join("\n"));
      await process_().deliver(delivery);
      expect(api.messages(token)).toEqual(parts);
    }
    // Before the first follow-up, the original stops loading: it shows the count, at 0.
    const edits = api.received.filter((message) => message.kind === "edit-original").map((message) => message.content.trim());
    expect(edits.slice(0, 2)).toEqual([expect.stringMatching(/^-# Sending the reply in 2 parts\.\.\. \(0 sent below, /), shown[0]]);
  });

  it("delivers the rest of a long reply when another process retries after a crash before or after the first follow-up", async () => {
    // The process dies: as it sends the first follow-up (the original shows the count at 0), or as it records it.
    for (const [requestsDone, expected] of [
      [2, shown],
      // Sent but not counted: the one follow-up a crash can repeat.
      [3, [shown[0], shown[1], shown[1], shown[2]]],
    ] as const) {
      const { token, delivery } = reply(long);
      api.failAfter(requestsDone);
      const crashed = await process_().deliver(delivery).catch((error: unknown) => error);
      expect(isAssemblyLineError(crashed, "AL_ERR_DISCORD_DELIVERY"), String(crashed)).toBe(true);
      await process_().deliver({ ...delivery, attempt: 2 });
      expect(api.messages(token)).toEqual(expected);
    }
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
    api.failAfter(3); // the GET, the count at 0 and the first follow-up pass; recording it in the original gets a 500
    const failure = await channel.deliver(delivery).catch((error: unknown) => error);
    expect(isAssemblyLineError(failure, "AL_ERR_DISCORD_DELIVERY"), String(failure)).toBe(true);
    expect(api.messages(token)).toEqual([expect.stringMatching(/^-# Sending the reply in 3 parts\.\.\. \(0 sent below, [0-9a-f]{8}\)$/), shown[1]]);
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

  it("fails at once, saying the reply was too long, when Discord refuses a follow-up past a user-installed app's 5 (40094)", async () => {
    const text = Array.from({ length: 8 }, (_, index) => String(index).repeat(90)).join("\n");
    const { token, delivery } = reply(text, 0, { followupLimit: 5 });
    const channel = defineDiscordChannel({ env: { DISCORD_PUBLIC_KEY: keys.publicKeyHex }, apiBaseUrl: api.apiBaseUrl, messageLimit: 100 });
    const failure = await channel.deliver(delivery).catch((error: unknown) => error);
    expect(String(failure)).toMatch(/AL_ERR_DISCORD_DELIVERY.*code 40094/);
    expect(isFinalDeliveryFailure(failure)).toBe(true);
    expect((failure as { fix?: string }).fix).toMatch(/reply was too long .* only 5 follow-up messages/);
    expect(inspect(failure, { depth: 10 })).not.toContain(token);
  });

  it("fails at once when Discord refuses messages to the user (50007) or into an archived thread (50083)", async () => {
    const refusals = [
      { status: 403, code: 50007, message: "Cannot send messages to this user", fix: /refuses messages to this user/ },
      { status: 400, code: 50083, message: "Invalid action on archived thread", fix: /archived or locked: unarchive it/ },
    ];
    for (const { fix, ...refusal } of refusals) {
      for (const age of [0, twentyMinutes]) {
        const { token, delivery } = reply("unwelcome", age);
        api.refuseNext(refusal);
        const failure = await withBot().deliver(delivery).catch((error: unknown) => error);
        expect(String(failure)).toContain(`code ${refusal.code}`);
        expect(isFinalDeliveryFailure(failure)).toBe(true);
        expect((failure as { fix?: string }).fix).toMatch(fix);
        expect(inspect(failure, { depth: 10 })).not.toContain(token);
      }
    }
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

/** Later than an interaction token lives. */
const twentyMinutes = 20 * 60_000;
/** In an interaction token's last minute, when the bot takes over. */
const lastMinute = 14.5 * 60_000;
const channelPosts = () => api.requests.filter((request) => request.path === `/api/v10/channels/${CHANNEL}/messages`);
const webhookCalls = () => api.requests.filter((request) => request.path.startsWith("/api/v10/webhooks/"));

describe("delivering a reply after the interaction's token expired", () => {
  it("posts it once in the channel as the bot, mentioning only the user who asked, when Discord says the token expired", async () => {
    const { token, delivery } = reply("the answer, at last");
    api.expireInteraction(token);
    await withBot().deliver(delivery);
    expect(webhookCalls().map((request) => `${request.method} ${request.status}`)).toEqual(["PATCH 401"]);
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> the answer, at last`]);
    expect(api.posted[0]).toMatchObject({ allowedMentions: { parse: [], users: [ASKER] }, enforceNonce: true, nonce: nonceOf(delivery.deliveryId, 0) });
    // The outbox did not record it (a crash): another process delivers it again, and Discord returns the same message.
    await withBot().deliver({ ...delivery, attempt: 2 });
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> the answer, at last`]);
    expect(api.messages(token)).toEqual([]);
  });

  it("goes to the bot at once, trying no webhook, for an interaction older than its token's 15 minutes", async () => {
    const { delivery } = reply("answered after an approval", twentyMinutes);
    await withBot().deliver(delivery);
    expect(webhookCalls()).toEqual([]);
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> answered after an approval`]);
  });

  it("sends nothing as the bot, in the token's last minute, for a reply the webhook already delivered before a crash", async () => {
    const { token, delivery } = reply("delivered just in time", lastMinute);
    // An attempt without the bot token went through the webhook; the process died before the outbox recorded it.
    await process_().deliver(delivery);
    expect(api.messages(token)).toEqual(["delivered just in time"]);
    await withBot().deliver({ ...delivery, attempt: 2 });
    expect(api.channelMessages(CHANNEL)).toEqual([]);
    // One that nothing delivered yet goes to the bot, before the token can expire under it.
    const pending = reply("not yet delivered", lastMinute);
    await withBot().deliver({ ...pending.delivery, deliveryId: "dlv_2" });
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> not yet delivered`]);
    expect(api.messages(pending.token)).toEqual([]);
  });

  it("reads the bot token from the variable botTokenEnv names, on every delivery", async () => {
    const env: Record<string, string | undefined> = { DISCORD_PUBLIC_KEY: keys.publicKeyHex };
    const channel = defineDiscordChannel({ env, apiBaseUrl: api.apiBaseUrl, botTokenEnv: "OPS_DISCORD_BOT" });
    const first = reply("first", twentyMinutes);
    const refused = await channel.deliver(first.delivery).catch((error: unknown) => error);
    expect(String(refused)).toContain("OPS_DISCORD_BOT");
    env.OPS_DISCORD_BOT = api.botToken;
    const second = reply("second", twentyMinutes);
    await channel.deliver({ ...second.delivery, deliveryId: "dlv_2" });
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> second`]);
  });

  it("sends no part twice when another process retries a long reply the bot was posting when it crashed", async () => {
    const { delivery } = reply(roomy, twentyMinutes);
    // The first two parts go out; the process dies as it sends the third.
    api.failAfter(2);
    const crashed = await withBot().deliver(delivery).catch((error: unknown) => error);
    expect(isAssemblyLineError(crashed, "AL_ERR_DISCORD_DELIVERY"), String(crashed)).toBe(true);
    expect(isFinalDeliveryFailure(crashed)).toBe(false);
    expect(api.channelMessages(CHANNEL)).toHaveLength(2);
    // Another process, knowing nothing of the first, sends every part again: the nonces make Discord return the two it has.
    await withBot().deliver({ ...delivery, attempt: 2 });
    expect(channelPosts().slice(-3).map((request) => request.status)).toEqual([200, 200, 200]);
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> ${roomyShown[0]}`, ...roomyShown.slice(1)]);
    expect(api.posted.map((message) => message.nonce)).toEqual([0, 1, 2].map((chunk) => nonceOf(delivery.deliveryId, chunk)));
  });

  it("sends only the missing parts when a retry in the same process follows a failure half way", async () => {
    const { delivery } = reply(roomy, twentyMinutes);
    const channel = withBot();
    api.failAfter(1);
    await channel.deliver(delivery).catch(() => undefined);
    const before = channelPosts().length;
    await channel.deliver({ ...delivery, attempt: 2 });
    expect(channelPosts().length - before).toBe(2);
    expect(api.channelMessages(CHANNEL)).toHaveLength(3);
  });

  it("sends as the bot, in the token's last minute, only the first part and those after the follow-ups the original counts", async () => {
    const chunks = ["a".repeat(1900), "b".repeat(1900), "c".repeat(1900), "d".repeat(100)];
    const { token, delivery } = reply(chunks.join("\n"), lastMinute);
    // A process without the bot token sent the follow-up b and counted it; its follow-up c got a 500.
    api.failAfter(4);
    await process_().deliver(delivery).catch(() => undefined);
    expect(api.messages(token)).toEqual([expect.stringMatching(/^-# Sending the reply in 4 parts\.\.\. \(1 sent below/), chunks[1]]);
    // The retry comes in the token's last minute: the bot takes over, reading the count first.
    await withBot().deliver({ ...delivery, attempt: 2 });
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> ${chunks[0]}`, chunks[2], chunks[3]]);
    expect(api.posted.map((message) => message.nonce)).toEqual([0, 2, 3].map((chunk) => nonceOf(delivery.deliveryId, chunk)));
    // What stays: the original keeps its count, and a retry in another process once the token no longer reads it
    // sends b again (Discord's nonces return the bot's own parts, within its window).
    expect(api.messages(token)[0]).toMatch(/^-# Sending the reply in 4 parts/);
    api.expireInteraction(token);
    await withBot().deliver({ ...delivery, attempt: 3 });
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> ${chunks[0]}`, chunks[2], chunks[3], chunks[1]]);
  });

  it("sends as the bot only the parts the webhook has not, as this process remembers them, once Discord says the token expired", async () => {
    const chunks = ["a".repeat(1900), "b".repeat(1900), "c".repeat(1900), "d".repeat(100)];
    const { token, delivery } = reply(chunks.join("\n"));
    const channel = withBot();
    // Sent: the follow-up b, uncounted (the count's edit got a 500).
    api.failAfter(3);
    await channel.deliver(delivery).catch(() => undefined);
    api.expireInteraction(token);
    await channel.deliver({ ...delivery, attempt: 2 });
    expect(api.messages(token)).toEqual([expect.stringMatching(/^-# Sending the reply in 4 parts\.\.\. \(0 sent below/), chunks[1]]);
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> ${chunks[0]}`, chunks[2], chunks[3]]);
  });

  it("sends as the bot only the follow-ups not yet sent below a deleted original, once the token expired", async () => {
    const { token, delivery } = reply(long);
    api.deleteOriginal(token);
    const channel = withBot();
    // The GET of the original (404) and the first follow-up; the second gets a 500.
    api.failAfter(2);
    await channel.deliver(delivery).catch(() => undefined);
    api.expireInteraction(token);
    await channel.deliver({ ...delivery, attempt: 2 });
    expect(api.messages(token)).toEqual(shown.slice(0, 1));
    // The reply's start, where the mention goes, is out already: the rest pings no one.
    expect(api.channelMessages(CHANNEL)).toEqual(shown.slice(1));
    expect(api.posted.map((message) => message.allowedMentions)).toEqual([{ parse: [] }, { parse: [] }]);
  });

  it("sends a part again when another process retries it after Discord's nonce window: what the nonce does not cover", async () => {
    const short = await new FakeDiscordApi({ nonceWindowMs: 100 }).start();
    onTestFinished(() => short.stop());
    const channel = () => defineDiscordChannel({ env: { DISCORD_PUBLIC_KEY: keys.publicKeyHex, DISCORD_BOT_TOKEN: short.botToken }, apiBaseUrl: short.apiBaseUrl });
    const { delivery } = reply(roomyShown.slice(0, 2).join("\n"), twentyMinutes);
    short.failAfter(1);
    await channel().deliver(delivery).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await channel().deliver({ ...delivery, attempt: 2 });
    expect(short.channelMessages(CHANNEL)).toHaveLength(3);
  });

  it("tells the user a run failed as the bot's message once the token expired", async () => {
    const { delivery } = reply("unused", twentyMinutes);
    const { text: _, ...failure } = delivery;
    await withBot().deliverFailure({ ...failure, code: "AL_ERR_HARNESS" });
    expect(api.channelMessages(CHANNEL)).toEqual([`<@${ASKER}> ${FAILURE_REPLY}`]);
  });

  it("keeps each part's nonce within Discord's 25 characters, the same for every attempt and different for every part and delivery", () => {
    const nonces = [nonceOf("dlv_1", 0), nonceOf("dlv_1", 0, 1), nonceOf("dlv_1", 1), nonceOf("dlv_1", 123456), nonceOf("dlv_1", 123456, 99), nonceOf("dlv_2", 0)];
    for (const nonce of nonces) expect(nonce.length).toBeLessThanOrEqual(25);
    expect(new Set(nonces).size).toBe(nonces.length);
    expect(nonceOf("dlv_1", 1)).toBe(nonces[2]);
  });

  it("cuts the reply where the webhook does, splitting again only a first part the mention makes too long", async () => {
    const { delivery } = reply(long, twentyMinutes);
    await withBot().deliver(delivery);
    // The mention pushes the first chunk past 2000 characters: it alone is cut again; the others are the webhook's.
    const mentioned = splitMessage(`<@${ASKER}> ${shown[0]}\n`, 2000).map((piece) => piece.trim());
    expect(mentioned).toHaveLength(2);
    expect(api.channelMessages(CHANNEL)).toEqual([...mentioned, shown[1], shown[2]]);
    expect(api.posted.map((message) => message.nonce)).toEqual([nonceOf(delivery.deliveryId, 0, 0), nonceOf(delivery.deliveryId, 0, 1), nonceOf(delivery.deliveryId, 1), nonceOf(delivery.deliveryId, 2)]);
    expect(api.posted.map((message) => message.allowedMentions)).toEqual([{ parse: [], users: [ASKER] }, { parse: [] }, { parse: [] }, { parse: [] }]);
  });

  it("fails for good without a bot token, its error saying that replies after 15 minutes need DISCORD_BOT_TOKEN", async () => {
    const { token, delivery } = reply("too late", twentyMinutes);
    const failure = await process_().deliver(delivery).catch((error: unknown) => error);
    expect(isFinalDeliveryFailure(failure)).toBe(true);
    expect(isAssemblyLineError(failure, "AL_ERR_DISCORD_DELIVERY")).toBe(true);
    expect((failure as Error).message).toMatch(/code 50027.*needs DISCORD_BOT_TOKEN/);
    expect((failure as { fix?: string }).fix).toMatch(/later than that .* needs a bot token: set DISCORD_BOT_TOKEN/);
    expect(inspect(failure, { depth: 10 })).not.toContain(token);
    expect(channelPosts()).toEqual([]);
  });

  it("fails for good when the bot may not see the channel, and retries a refused bot token, naming its variable", async () => {
    const { delivery } = reply("nowhere to post", twentyMinutes);
    api.denyChannel(CHANNEL);
    const denied = await withBot().deliver(delivery).catch((error: unknown) => error);
    expect(String(denied)).toMatch(/403 \(code 50001\).*channel 1100000000000000001/);
    expect(isFinalDeliveryFailure(denied)).toBe(true);
    const wrong = await process_({ DISCORD_BOT_TOKEN: "not-the-bot-token" }).deliver(delivery).catch((error: unknown) => error);
    expect(String(wrong)).toMatch(/401.*refused the bot token in DISCORD_BOT_TOKEN/s);
    expect(String(wrong)).not.toContain("not-the-bot-token");
    expect(isFinalDeliveryFailure(wrong)).toBe(false);
  });

  it("tells the outbox the wait Discord asks for on the channel's messages, as on the webhook", async () => {
    const { delivery } = reply("rate limited", twentyMinutes);
    api.rateLimitNext(1, longWaitMs / 1000);
    const failure = await withBot().deliver(delivery).catch((error: unknown) => error);
    expect(String(failure)).toMatch(/AL_ERR_DISCORD_DELIVERY.*rate limited/);
    expect(deliveryRetryAfterMs(failure)).toBeGreaterThanOrEqual(longWaitMs - 1_000);
    expect(api.channelMessages(CHANNEL)).toEqual([]);
  });

  it("still replies through a fresh interaction's webhook while the bot waits out its global rate limit (Discord does not bind interaction endpoints to it)", async () => {
    const channel = withBot();
    api.limitBotGlobally(60);
    const late = reply("late", twentyMinutes);
    const limited = await channel.deliver(late.delivery).catch((error: unknown) => error);
    expect(String(limited)).toMatch(/AL_ERR_DISCORD_DELIVERY.*rate limited/);
    expect(deliveryRetryAfterMs(limited)).toBeGreaterThanOrEqual(55_000);
    const fresh = reply("fresh");
    await channel.deliver({ ...fresh.delivery, deliveryId: "dlv_2", runId: "run_2" });
    expect(api.messages(fresh.token)).toEqual(["fresh"]);
    expect(api.channelMessages(CHANNEL)).toEqual([]);
  });
});

describe("delivering a reply whose original response the user deleted", () => {
  it("sends a short reply as a follow-up instead of failing", async () => {
    const { token, delivery } = reply("still here");
    api.deleteOriginal(token);
    await process_().deliver(delivery);
    expect(api.received.filter((message) => message.interactionToken === token).map((message) => [message.kind, message.content])).toEqual([["followup", "still here"]]);
  });

  it("sends a long reply whole, in order, as follow-ups, and a retry in the same process only the ones missing", async () => {
    const { token, delivery } = reply(long);
    api.deleteOriginal(token);
    const channel = process_();
    // The GET of the original (404), the first follow-up; the second gets a 500.
    api.failAfter(2);
    const failed = await channel.deliver(delivery).catch((error: unknown) => error);
    expect(isFinalDeliveryFailure(failed)).toBe(false);
    expect(api.messages(token)).toEqual(shown.slice(0, 1));
    await channel.deliver({ ...delivery, attempt: 2 });
    expect(api.messages(token)).toEqual(shown);
  });
});
