import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, startHost, tempDir, waitFor } from "./support/host.js";

// A provider that verifies its webhook with a GET whose query carries the challenge (as Meta's
// hub.challenge does), and signs the URL it calls (as Twilio does).
const CHALLENGE_CHANNEL = `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/hooks/challenge", methods: ["GET", "POST"] });
export function normalizeHttp(request) {
  (globalThis.__challengeMethods ??= []).push(request.method);
  if (request.query["hub.verify_token"] !== "verify-me") throw Object.assign(new Error("unknown verify token"), { status: 403 });
  return { ack: true, body: { challenge: request.query["hub.challenge"], query: request.query, url: request.url, path: request.path } };
}
`;

// A provider that answers with a status and body of its own: a turn's respond, or an ack's.
const ANSWER_CHANNEL = `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/hooks/answer", methods: ["POST"] });
export function normalizeHttp(request) {
  const status = request.query.status === undefined ? undefined : Number(request.query.status);
  const body = request.query.body === "bigint" ? { n: 1n } : { ok: "deferred" };
  if (request.query.ack === "1") return { ack: true, status, body };
  return { eventId: "evt-" + request.query.id, conversationId: "", message: "echo: hi", respond: { status, body } };
}
`;

// A provider channel returning the turn it is posted, as a channel with a bug in how it builds its turn might.
const TURN_CHANNEL = `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/hooks/turn", methods: ["POST"] });
export function normalizeHttp(request) {
  return request.body;
}
`;

// A provider whose verification waits on a call that never answers (a key server that hangs): it keeps the signal it is given.
const HANGING_CHANNEL = `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/hooks/hanging", methods: ["POST"] });
export function normalizeHttp(request) {
  (globalThis.__hangingRequests ??= []).push(request.signal);
  return new Promise(() => {});
}
`;

let bundle: RuntimeBundle;
beforeAll(async () => {
  const agentDir = join(tempDir("al-channel-request-"), "agent");
  mkdirSync(join(agentDir, "channels"), { recursive: true });
  writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", instructions: "Test." });\n`);
  writeFileSync(join(agentDir, "channels", "challenge.ts"), CHALLENGE_CHANNEL);
  writeFileSync(join(agentDir, "channels", "answer.ts"), ANSWER_CHANNEL);
  writeFileSync(join(agentDir, "channels", "turn.ts"), TURN_CHANNEL);
  writeFileSync(join(agentDir, "channels", "hanging.ts"), HANGING_CHANNEL);
  bundle = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
});

describe("a normalizeHttp that never answers", () => {
  it("is given up at requestTimeoutMs: the caller gets a generic 503, the channel's signal aborts, nothing is stored, and a shutdown does not wait for it", async () => {
    const signals: AbortSignal[] = [];
    (globalThis as { __hangingRequests?: AbortSignal[] }).__hangingRequests = signals;
    onTestFinished(() => {
      delete (globalThis as { __hangingRequests?: AbortSignal[] }).__hangingRequests;
    });
    const host = await startHost(bundle, { requestTimeoutMs: 1_000 });
    const reply = await call(`${host.url}/hooks/hanging`, { body: { id: "evt-1" } });
    expect(reply.status).toBe(503);
    expect(reply.headers.get("retry-after")).toBe("5");
    expect(reply.body.error).toMatchObject({ code: "AL_ERR_CHANNEL_TIMEOUT", message: "the request could not be handled in time; nothing was accepted" });
    // Nothing of the channel (its name, its code) reaches the caller; the log says which one it was.
    expect(JSON.stringify(reply.body)).not.toMatch(/hanging|normalizeHttp/);
    expect(host.logger.events("channel.normalize_timeout")).toMatchObject([{ level: "warn", fields: { channel: "hanging", timeoutMs: 1_000 } }]);
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
    expect((await host.runtime.state.runs.listRuns()).runs).toEqual([]);

    // A request still waiting on the channel when the drain begins: the shutdown (given far longer) ends once it is answered.
    const pending = call(`${host.url}/hooks/hanging`, { body: { id: "evt-2" } });
    await waitFor(() => (signals.length === 2 ? true : undefined), 10_000, "the second request to reach normalizeHttp");
    await host.shutdown({ timeoutMs: 120_000 });
    expect((await pending).status).toBe(503);
    expect(host.logger.events("shutdown.completed")).toHaveLength(1);
  });
});

describe("the request normalizeHttp receives", () => {
  it("carries the query string, so a channel can answer a provider's verification challenge", async () => {
    const host = await startHost(bundle);
    const reply = await call(`${host.url}/hooks/challenge?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=verify-me`);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ challenge: "1158201444", path: "/hooks/challenge" });
    const refused = await call(`${host.url}/hooks/challenge?hub.mode=subscribe&hub.challenge=1&hub.verify_token=guess`);
    expect(refused.status).toBe(403);
  });

  it("gives a parameter sent more than once as its values in order, and the URL exactly as requested for a signature", async () => {
    const host = await startHost(bundle);
    const target = "/hooks/challenge?hub.verify_token=verify-me&To=%2B15551234567&tag=a&tag=b&note=two%20words";
    const reply = await call(`${host.url}${target}`);
    expect(reply.status).toBe(200);
    expect(reply.body.query).toEqual({ "hub.verify_token": "verify-me", To: "+15551234567", tag: ["a", "b"], note: "two words" });
    expect(reply.body.url).toBe(target);
    expect(reply.body.path).toBe("/hooks/challenge");
  });

  it("answers HEAD on a channel route that declared only GET and POST with 405 and Allow, never reaching normalizeHttp", async () => {
    const host = await startHost(bundle);
    const seen: string[] = [];
    (globalThis as { __challengeMethods?: string[] }).__challengeMethods = seen;
    const reply = await fetch(`${host.url}/hooks/challenge?hub.verify_token=verify-me`, { method: "HEAD" });
    expect(reply.status).toBe(405);
    expect(reply.headers.get("allow")).toBe("GET, POST");
    expect(seen).toEqual([]);
    expect((await host.runtime.state.runs.listRuns()).runs).toEqual([]);
    // The host's own GET routes still answer HEAD.
    expect((await fetch(`${host.url}/healthz`, { method: "HEAD" })).status).toBe(200);
    expect((await fetch(`${host.url}/runs`, { method: "HEAD" })).status).toBe(200);
  });
});

describe("a channel's own answer (a turn's respond, an ack)", () => {
  it("refuses a respond.status no HTTP answer can carry before the turn is stored, so a redelivery is refused the same way", async () => {
    const host = await startHost(bundle);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const refused = await call(`${host.url}/hooks/answer?id=r1&status=99`, { method: "POST" });
      expect(refused.status).toBe(500);
      expect(refused.body.error).toMatchObject({ code: "AL_ERR_CHANNEL_TURN_INVALID", message: expect.stringContaining("respond.status is 99") });
    }
    expect((await host.runtime.state.runs.listRuns()).runs).toEqual([]);
    expect(host.logger.events("channel.turn_invalid").map((entry) => entry.fields.field)).toEqual(["respond.status", "respond.status"]);
    const unsendable = await call(`${host.url}/hooks/answer?id=r2&body=bigint`, { method: "POST" });
    expect(unsendable.body.error.message).toContain("respond.body is not JSON");
    expect((await host.runtime.state.runs.listRuns()).runs).toEqual([]);
    const accepted = await call(`${host.url}/hooks/answer?id=r3&status=202`, { method: "POST" });
    expect(accepted).toMatchObject({ status: 202, body: { ok: "deferred" } });
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(1);
  });

  it("refuses an ack whose status is not an integer from 200 to 599", async () => {
    const host = await startHost(bundle);
    const refused = await call(`${host.url}/hooks/answer?ack=1&status=1000`, { method: "POST" });
    expect(refused.status).toBe(500);
    expect(refused.body.error).toMatchObject({ code: "AL_ERR_CHANNEL_TURN_INVALID", message: expect.stringContaining("an ack whose status is 1000") });
    expect((await call(`${host.url}/hooks/answer?ack=1&status=201`, { method: "POST" })).status).toBe(201);
  });
});

describe("a turn whose parts are not what ChannelTurn says", () => {
  const turn = (fields: Record<string, unknown>) => ({ eventId: "evt-malformed", conversationId: "c1", message: "echo: hi", ...fields });

  it.each([
    ["respond", { respond: 202 }, "whose respond is 202, not an object"],
    ["user", { user: "u1" }, 'whose user is "u1", not an object'],
    ["user.id", { user: { name: "Ada" } }, "whose user.id is missing, not a string"],
    ["user.name", { user: { id: "u1", name: 7 } }, "whose user.name is 7, not a string"],
    ["attachments[0]", { attachments: ["https://cdn.example.com/f.png"] }, 'whose attachments[0] is "https://cdn.example.com/f.png", not an object'],
    ["attachments[1].id", { attachments: [{ id: "a1" }, { id: 12345, url: "https://cdn.example.com/f.png" }] }, "whose attachments[1].id is 12345, not a string"],
  ])("refuses a turn with a malformed %s (500 AL_ERR_CHANNEL_TURN_INVALID naming it) before anything is stored", async (field, fields, message) => {
    const host = await startHost(bundle);
    const refused = await call(`${host.url}/hooks/turn`, { body: turn(fields) });
    expect(refused.status).toBe(500);
    expect(refused.body.error).toMatchObject({ code: "AL_ERR_CHANNEL_TURN_INVALID", message: expect.stringContaining(message) });
    expect(host.logger.events("channel.turn_invalid").map((entry) => entry.fields.field)).toEqual([field]);
    expect((await host.runtime.state.runs.listRuns()).runs).toEqual([]);
  });

  it("takes a turn whose user and respond have the fields ChannelTurn gives them", async () => {
    const host = await startHost(bundle);
    const accepted = await call(`${host.url}/hooks/turn`, { body: turn({ user: { id: "u1", name: "Ada" }, respond: { status: 202 } }) });
    expect(accepted).toMatchObject({ status: 202, body: { ok: true } });
    const [run] = (await host.runtime.state.runs.listRuns()).runs;
    expect(run?.input.channel?.metadata).toMatchObject({ user: { id: "u1", name: "Ada" } });
  });
});

describe("a provider's long event id", () => {
  it("still dedupes: a redelivery of an event with a 6 000-character id gets the run the first delivery started", async () => {
    const host = await startHost(bundle);
    const eventId = `evt-${"x".repeat(6_000)}`;
    const first = await call(`${host.url}/hooks/turn`, { body: { eventId, conversationId: "", message: "echo: hi" } });
    const again = await call(`${host.url}/hooks/turn`, { body: { eventId, conversationId: "", message: "echo: hi" } });
    const other = await call(`${host.url}/hooks/turn`, { body: { eventId: `${eventId}y`, conversationId: "", message: "echo: hi" } });
    expect([first.status, again.status, other.status]).toEqual([202, 200, 202]);
    expect(again.body).toMatchObject({ runId: first.body.runId, duplicate: true });
    expect(other.body.runId).not.toBe(first.body.runId);
    // The run keeps the event id as the provider sent it.
    expect((await host.runtime.state.runs.getRun(first.body.runId))?.input.channel?.metadata).toMatchObject({ eventId });
  });
});
