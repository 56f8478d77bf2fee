import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { postgresSchemas } from "./support/postgres-schemas.js";
import { call, captureServer, fixtureBundle, signedEvent, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

/** One PostgreSQL schema per test when the test database answers, all dropped after the file. */
const postgres = await postgresSchemas("channels on PostgreSQL state", "al_host_channels");

describe.skipIf(!postgres.available)("channels on PostgreSQL state", () => {
  it("starts one run for a provider event sent to two replicas at once, and delivers its reply once", async () => {
    const provider = await captureServer();
    process.env.FIXTURE_DELIVERY_URL = `${provider.url}/deliver`;
    onTestFinished(() => {
      delete process.env.FIXTURE_DELIVERY_URL;
    });
    const schema = postgres.newSchema();
    const a = await startHost(bundle, { state: await postgres.state(schema) });
    const b = await startHost(bundle, { state: await postgres.state(schema) });
    const event = signedEvent({ type: "message", id: "evt-both-replicas", conversation: "c-dup", text: "echo: hi" });
    const [ra, rb] = await Promise.all([
      call(`${a.url}/provider/events`, { raw: event.raw, headers: event.headers }),
      call(`${b.url}/provider/events`, { raw: event.raw, headers: event.headers }),
    ]);
    expect([ra.status, rb.status].sort()).toEqual([200, 202]);
    expect(ra.body.runId).toBe(rb.body.runId);
    await waitFor(() => provider.requests.length >= 1 || undefined, 15_000, "a delivery");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(provider.requests).toHaveLength(1);
  });

  it("refuses a raw route's Idempotency-Key longer than 255 bytes with 400, not a 500 from the key's index", async () => {
    const host = await startHost(bundle, { state: await postgres.state() });
    const refused = await call(`${host.url}/message`, { body: { message: "echo: hi" }, headers: { "idempotency-key": randomBytes(3_000).toString("hex") } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe("AL_ERR_HTTP_BODY_INVALID");
    expect(host.logger.events("http.failed")).toEqual([]);
  });

  it("refuses a raw route's conversationId longer than 512 bytes with 400 naming it, not a 500 from the conversation index", async () => {
    const state = await postgres.state();
    const host = await startHost(bundle, { state });
    const refused = await call(`${host.url}/message`, { body: { message: "echo: hi", conversationId: randomBytes(3_000).toString("hex") } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: "AL_ERR_HTTP_BODY_INVALID", message: "body.conversationId is 6000 bytes; it may be at most 512" });
    expect((await state.listRuns({})).runs).toEqual([]);
    // 512 bytes is still taken.
    const accepted = await call(`${host.url}/message`, { body: { message: "echo: hi", conversationId: "c".repeat(512) } });
    expect(accepted.status).toBe(202);
    expect(host.logger.events("http.failed")).toEqual([]);
  });

  it("refuses a channel turn whose conversationId is longer than 512 bytes as the channel's fault, before storing a run", async () => {
    const state = await postgres.state();
    const host = await startHost(bundle, { state });
    const event = signedEvent({ type: "message", id: "evt-long-conversation", conversation: randomBytes(3_000).toString("hex"), text: "echo: hi" });
    const refused = await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    expect(refused.status).toBe(500);
    expect(refused.body.error.code).toBe("AL_ERR_CHANNEL_TURN_INVALID");
    expect(refused.body.error.message).toContain("conversationId is 6000 bytes, not at most 512 bytes");
    expect((await state.listRuns({})).runs).toEqual([]);
    expect(host.logger.events("channel.turn_invalid")).toHaveLength(1);
  });

  it("dedupes a provider event whose id is longer than the key's index takes", async () => {
    const host = await startHost(bundle, { state: await postgres.state() });
    // Random, so the database cannot compress it under the index's limit.
    const event = signedEvent({ type: "message", id: `evt-${randomBytes(3_000).toString("hex")}`, conversation: "c-long", text: "echo: hi" });
    const first = await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    const again = await call(`${host.url}/provider/events`, { raw: event.raw, headers: event.headers });
    expect([first.status, again.status]).toEqual([202, 200]);
    expect(again.body).toMatchObject({ runId: first.body.runId, duplicate: true });
    expect(host.logger.events("http.failed")).toEqual([]);
  });
});
