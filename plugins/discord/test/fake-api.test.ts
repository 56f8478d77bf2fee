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
    const hook = (token: string, path = "", method = "POST") =>
      fetch(`${api.apiBaseUrl}/v10/webhooks/1/${token}${path}`, { method, headers: { "content-type": "application/json" }, body: method === "GET" ? null : JSON.stringify({ content: "hi" }) }).then(async (response) => ({ status: response.status, body: response.status === 204 ? {} : ((await response.json()) as Record<string, unknown>) }));
    api.registerInteraction("old", { createdAt: Date.now() - 16 * 60_000 });
    expect(await hook("old", "/messages/@original", "PATCH")).toMatchObject({ status: 401, body: { code: 50027 } });
    api.registerInteraction("live");
    api.deleteOriginal("live");
    expect(await hook("live", "/messages/@original", "GET")).toMatchObject({ status: 404, body: { code: 10008 } });
    expect((await hook("live")).status).toBe(204);
    expect(api.messages("live")).toEqual(["hi"]);
    api.expireInteraction("live");
    expect(await hook("live")).toMatchObject({ status: 401, body: { code: 50027 } });
  });
});
