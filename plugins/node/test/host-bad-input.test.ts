import { request } from "node:http";
import { beforeAll, describe, expect, it } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost, type Reply } from "./support/host.js";

let bundle: RuntimeBundle;
let host: Awaited<ReturnType<typeof startHost>>;
const TOKEN = "bad-input-token";
const auth = { authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  bundle = await fixtureBundle();
  host = await startHost(bundle, { devMode: false, maxBodyBytes: 1024, env: { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_BEARER_TOKEN: TOKEN } });
});

/** Everything a refused request could have touched. */
async function storedState() {
  const runs = (await host.runtime.state.runs.listRuns({ limit: 200 })).runs;
  return { runs: runs.map((run) => [run.id, run.status, run.lastSeq]), audit: await host.runtime.state.settings.listSettingAudit() };
}

function expectError(reply: Reply, status: number, code: string): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
  expect(reply.body.error).toMatchObject({ code, message: expect.any(String), requestId: expect.any(String) });
}

/** A chunked upload without Content-Length, so only the streamed size can trip the cap. */
function streamed(url: string, chunks: number): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/message`, { method: "POST", headers: { "content-type": "application/json", ...auth } }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    let sent = 0;
    const pump = () => {
      if (sent >= chunks || req.destroyed) return req.end();
      sent += 1;
      req.write("x".repeat(512), () => setTimeout(pump, 1));
    };
    pump();
  });
}

describe("bad input gets the right status and a JSON error, and changes no stored state", () => {
  it("covers malformed bodies, wrong types, sizes, tokens and routes", async () => {
    const before = await storedState();
    const message = `${host.url}/message`;
    expectError(await call(message, { raw: "{not json", headers: { "content-type": "application/json", ...auth } }), 400, "AL_ERR_HTTP_BODY_INVALID");
    expectError(await call(message, { raw: "[1,2]", headers: { "content-type": "application/json", ...auth } }), 400, "AL_ERR_HTTP_BODY_INVALID");
    expectError(await call(message, { body: { conversationId: "c" }, headers: auth }), 400, "AL_ERR_HTTP_BODY_INVALID");
    expectError(await call(message, { body: { message: 42 }, headers: auth }), 400, "AL_ERR_HTTP_BODY_INVALID");
    expectError(await call(message, { body: { message: "hi", conversationId: ["x"] }, headers: auth }), 400, "AL_ERR_HTTP_BODY_INVALID");
    // A field the default message fallback does not read is refused, not dropped (metadata would look accepted).
    const extra = await call(message, { body: { message: "hi", metadata: { access: "read-only" } }, headers: auth });
    expectError(extra, 400, "AL_ERR_HTTP_BODY_INVALID");
    expect(JSON.stringify(extra.body)).toContain("body.metadata");
    expectError(await call(message, { raw: "message=hi", headers: { "content-type": "text/plain", ...auth } }), 415, "AL_ERR_HTTP_CONTENT_TYPE");
    expectError(await call(message, { raw: "{}", headers: auth }), 415, "AL_ERR_HTTP_CONTENT_TYPE");
    expectError(await call(message, { body: { message: "x".repeat(5000) }, headers: auth }), 413, "AL_ERR_HTTP_BODY_TOO_LARGE");
    const chunked = await streamed(host.url, 8);
    expect(chunked.status).toBe(413);
    expect(chunked.body.error.code).toBe("AL_ERR_HTTP_BODY_TOO_LARGE");
    expectError(await call(message, { body: { message: "hi" } }), 401, "AL_ERR_HTTP_UNAUTHORIZED");
    expectError(await call(message, { body: { message: "hi" }, headers: { authorization: "Bearer wrong" } }), 401, "AL_ERR_HTTP_UNAUTHORIZED");
    expectError(await call(message, { body: { message: "hi" }, headers: { authorization: TOKEN } }), 401, "AL_ERR_HTTP_UNAUTHORIZED");
    expectError(await call(`${host.url}/runs`), 401, "AL_ERR_HTTP_UNAUTHORIZED");
    expectError(await call(`${host.url}/admin/kill-switch`, { body: { engaged: true } }), 401, "AL_ERR_HTTP_UNAUTHORIZED");
    expectError(await call(`${host.url}/nowhere`, { headers: auth }), 404, "AL_ERR_HTTP_NOT_FOUND");
    expectError(await call(`${host.url}/message/extra`, { body: { message: "hi" }, headers: auth }), 404, "AL_ERR_HTTP_NOT_FOUND");
    const wrongMethod = await call(message, { method: "GET", headers: auth });
    expectError(wrongMethod, 405, "AL_ERR_HTTP_METHOD");
    expect(wrongMethod.headers.get("allow")).toBe("POST");
    expectError(await call(`${host.url}/runs/run_missing`, { headers: auth }), 404, "AL_ERR_RUN_NOT_FOUND");
    expectError(await call(`${host.url}/runs/run_missing/approve`, { body: {}, headers: auth }), 404, "AL_ERR_RUN_NOT_FOUND");
    expectError(await call(`${host.url}/runs?limit=0`, { headers: auth }), 400, "AL_ERR_HTTP_BODY_INVALID");
    expectError(await call(`${host.url}/runs?status=sleeping`, { headers: auth }), 400, "AL_ERR_HTTP_BODY_INVALID");
    expectError(await call(`${host.url}/runs?cursor=forged`, { headers: auth }), 400, "AL_ERR_STATE_INPUT_INVALID");
    expectError(await call(`${host.url}/admin/kill-switch`, { body: { engaged: "yes" }, headers: auth }), 400, "AL_ERR_HTTP_BODY_INVALID");
    // A misspelt reason is refused, as the decision routes refuse a misspelt callId: the switch stays as it was.
    const misspelt = await call(`${host.url}/admin/kill-switch`, { body: { engaged: true, reasn: "provider incident", actor: "alice" }, headers: auth });
    expectError(misspelt, 400, "AL_ERR_HTTP_BODY_INVALID");
    expect(misspelt.body.error.message).toContain("body.reasn");
    expectError(await call(`${host.url}/message?wait=soon`, { body: { message: "hi" }, headers: auth }), 400, "AL_ERR_HTTP_BODY_INVALID");
    expect(await storedState()).toEqual(before);
    expect(before.runs).toEqual([]);
  });

  it("reads /runs' limit and afterSeq in decimal digits only, as ?wait= is, answering anything else 400 naming it", async () => {
    const done = await call(`${host.url}/message?wait=10`, { body: { message: "echo: hi" }, headers: auth });
    const events = `${host.url}/runs/${done.body.runId}/events`;
    for (const [url, name] of [
      [`${host.url}/runs?limit=0x10`, "limit"],
      [`${host.url}/runs?limit=1e2`, "limit"],
      [`${host.url}/runs?limit=%2010`, "limit"],
      [`${host.url}/runs?limit=201`, "limit"],
      [`${events}?limit=0b11`, "limit"],
      [`${events}?afterSeq=0x10`, "afterSeq"],
      [`${events}?afterSeq=1e2`, "afterSeq"],
      [`${events}?afterSeq=-1`, "afterSeq"],
      [`${events}?afterSeq=1.5`, "afterSeq"],
    ] as const) {
      const reply = await call(url, { headers: auth });
      expectError(reply, 400, "AL_ERR_HTTP_BODY_INVALID");
      expect(reply.body.error.message).toContain(`query parameter ${name}=`);
      expect(reply.body.error.message).toContain("is not a whole number");
    }
    expect((await call(`${host.url}/runs?limit=1`, { headers: auth })).body.runs).toHaveLength(1);
    const page = await call(`${events}?afterSeq=2&limit=3`, { headers: auth });
    expect(page.body.events.map((event: { seq: number }) => event.seq)).toEqual([3, 4, 5]);
    expect((await call(`${events}?afterSeq=&limit=`, { headers: auth })).body.events[0].seq).toBe(1);
  });

  it("refuses decisions a run is not waiting for with 409", async () => {
    const done = await call(`${host.url}/message?wait=10`, { body: { message: "echo: hi" }, headers: auth });
    expect(done.body.status).toBe("completed");
    const before = await storedState();
    expectError(await call(`${host.url}/runs/${done.body.runId}/approve`, { body: {}, headers: auth }), 409, "AL_ERR_RUN_NOT_RESUMABLE");
    expectError(await call(`${host.url}/runs/${done.body.runId}/answer`, { body: { answer: "x" }, headers: auth }), 409, "AL_ERR_RUN_NOT_RESUMABLE");
    expectError(await call(`${host.url}/runs/${done.body.runId}/answer`, { body: {}, headers: auth }), 400, "AL_ERR_HTTP_BODY_INVALID");
    expect(await storedState()).toEqual(before);
  });

  it("answers a request target that is not a path with 400, and reads //x/admin as that path, not as a host x", async () => {
    const before = await storedState();
    const failedBefore = host.logger.events("http.failed").length;
    /** Sent as the request line's target, as written: fetch would normalize it first. */
    const target = (path: string, method = "GET") =>
      new Promise<Reply>((resolve, reject) => {
        const req = request(host.url, { method, path, headers: { ...auth, "content-type": "application/json" } }, (res) => {
          let text = "";
          res.on("data", (chunk) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: new Headers(res.headers as Record<string, string>), body: JSON.parse(text) }));
        });
        req.on("error", reject);
        req.end(method === "POST" ? JSON.stringify({ message: "x" }) : undefined);
      });
    expectError(await target("//["), 404, "AL_ERR_HTTP_NOT_FOUND");
    expectError(await target("http://a:99999/message", "POST"), 400, "AL_ERR_HTTP_TARGET_INVALID");
    expectError(await target("//a:99999/message", "POST"), 404, "AL_ERR_HTTP_NOT_FOUND");
    expectError(await target("//anything/admin/kill-switch", "POST"), 404, "AL_ERR_HTTP_NOT_FOUND");
    expectError(await target("*", "OPTIONS"), 400, "AL_ERR_HTTP_TARGET_INVALID");
    // A target that is the caller's error is no endpoint failure: nothing for the error log.
    expect(host.logger.events("http.failed")).toHaveLength(failedBefore);
    expect(await storedState()).toEqual(before);
  });
});
