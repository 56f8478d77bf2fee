import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeDiscordApi } from "../src/testkit/index.js";

let api: FakeDiscordApi;

beforeEach(async () => {
  api = await new FakeDiscordApi({ nonceWindowMs: 200 }).start();
});

afterEach(async () => {
  await api.stop();
});

const post = (channelId: string, body: unknown, authorization = `Bot ${api.botToken}`) =>
  fetch(`${api.apiBaseUrl}/v10/channels/${channelId}/messages`, { method: "POST", headers: { "content-type": "application/json", authorization }, body: JSON.stringify(body) }).then(async (response) => ({
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
  }));

/** A request to an interaction's webhook: POST for a follow-up (`path` may be a query), `/messages/@original` to read or edit the original. */
const hook = (token: string, path = "", method = "POST", content = "hi") =>
  fetch(`${api.apiBaseUrl}/v10/webhooks/1/${token}${path}`, { method, headers: { "content-type": "application/json" }, body: method === "GET" ? null : JSON.stringify({ content }) }).then(async (response) => ({
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
  }));

describe("the fake Discord API's channel messages, as Discord answers them", () => {
  it("refuses a request without the bot's token with 401", async () => {
    expect(await post("1", { content: "hi" }, "Bearer user-token")).toMatchObject({ status: 401, body: { code: 0 } });
    expect(await post("1", { content: "hi" }, "Bot wrong")).toMatchObject({ status: 401 });
    expect(api.posted).toEqual([]);
  });

  it("returns the earlier message for an enforced nonce within the window, and makes a new one after it or without enforce_nonce", async () => {
    const first = await post("1", { content: "once", nonce: "n1", enforce_nonce: true });
    const again = await post("1", { content: "once", nonce: "n1", enforce_nonce: true });
    expect(first.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    expect(api.channelMessages("1")).toEqual(["once"]);
    await post("1", { content: "once", nonce: "n1" });
    expect(api.channelMessages("1")).toEqual(["once", "once"]);
    await new Promise((resolve) => setTimeout(resolve, 250));
    const late = await post("1", { content: "once", nonce: "n1", enforce_nonce: true });
    expect(late.body.id).not.toBe(first.body.id);
    expect(api.channelMessages("1")).toHaveLength(3);
  });

  it("refuses a nonce longer than 25 characters, content over 2000 characters and an empty message", async () => {
    expect(await post("1", { content: "x", nonce: "n".repeat(26), enforce_nonce: true })).toMatchObject({ status: 400, body: { code: 50035, errors: { nonce: {} } } });
    expect(await post("1", { content: "x".repeat(2001) })).toMatchObject({ status: 400, body: { code: 50035, errors: { content: {} } } });
    expect(await post("1", { content: "   " })).toMatchObject({ status: 400, body: { code: 50006 } });
    expect(api.posted).toEqual([]);
  });

  it("rate limits channel messages as it does the webhook, and refuses a request sent before the bucket's reset", async () => {
    api.rateLimitNext(1, 0.3);
    const limited = await post("1", { content: "x" });
    expect(limited).toMatchObject({ status: 429, body: { retry_after: 0.3 } });
    expect((await post("1", { content: "x" })).status).toBe(429);
    expect(api.violations).toEqual([{ bucket: "channel-messages:1", early: true }]);
  });

  it("answers an expired interaction's webhook with 50027, and a deleted original with 10008 while follow-ups still go out", async () => {
    api.registerInteraction("old", { createdAt: Date.now() - 16 * 60_000 });
    expect(await hook("old", "/messages/@original", "PATCH")).toMatchObject({ status: 401, body: { code: 50027 } });
    api.registerInteraction("live");
    api.deleteOriginal("live");
    expect(await hook("live", "/messages/@original", "GET")).toMatchObject({ status: 404, body: { code: 10008 } });
    expect(await hook("live")).toMatchObject({ status: 200, body: { content: "hi" } });
    expect(api.messages("live")).toEqual(["hi"]);
    api.expireInteraction("live");
    expect(await hook("live")).toMatchObject({ status: 401, body: { code: 50027 } });
  });
});

describe("the fake Discord API's interaction webhook, as Discord answers it", () => {
  it("edits the still-loading original with a follow-up, as Discord does directly after a deferred response, and makes messages once it is edited", async () => {
    api.registerInteraction("deferred");
    expect(await hook("deferred", "", "POST", "first")).toMatchObject({ status: 200, body: { id: "1000", content: "first" } });
    expect(await hook("deferred", "/messages/@original", "GET")).toMatchObject({ status: 200, body: { content: "first", flags: 0 } });
    const second = await hook("deferred", "", "POST", "second");
    expect(second).toMatchObject({ status: 200, body: { content: "second" } });
    expect(second.body.id).not.toBe("1000");
    expect(api.messages("deferred")).toEqual(["first", "second"]);
  });

  it("answers every follow-up with its message, whatever wait says", async () => {
    api.registerInteraction("waiting");
    await hook("waiting", "/messages/@original", "PATCH", "original");
    for (const query of ["", "?wait=false", "?wait=true"]) expect(await hook("waiting", query, "POST", `follow-up${query}`)).toMatchObject({ status: 200, body: { content: `follow-up${query}` } });
  });

  it("refuses a follow-up past the interaction's followupLimit with 40094, as for a user-installed app not in the server", async () => {
    api.registerInteraction("limited", { followupLimit: 1 });
    await hook("limited", "/messages/@original", "PATCH", "original");
    expect((await hook("limited", "", "POST", "one")).status).toBe(200);
    expect(await hook("limited", "", "POST", "two")).toMatchObject({ status: 400, body: { code: 40094 } });
    expect(await hook("limited", "/messages/@original", "PATCH", "edited")).toMatchObject({ status: 200 });
    expect(api.messages("limited")).toEqual(["edited", "one"]);
  });

  it("refuses the next request with the error refuseNext names", async () => {
    api.registerInteraction("refused");
    api.refuseNext({ status: 403, code: 50007, message: "Cannot send messages to this user" });
    expect(await hook("refused", "/messages/@original", "PATCH")).toMatchObject({ status: 403, body: { code: 50007 } });
    expect((await hook("refused", "/messages/@original", "PATCH")).status).toBe(200);
  });
});
