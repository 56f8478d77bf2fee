import { join } from "node:path";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LocalBlobStore } from "@assemblyline-agents/local";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, captureServer, fixtureBundle, signedEvent, startHost, tempDir, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
  process.env.FIXTURE_TOKEN = "provider-download-token";
});
beforeEach(() => {
  delete (globalThis as { __otherResolved?: number }).__otherResolved;
});

async function sendWithAttachments(url: string, id: string, attachments: unknown[]) {
  const event = signedEvent({ type: "message", id, conversation: `conv-${id}`, text: "echo: see attached", attachments });
  const reply = await call(`${url}/provider/events?wait=10`, { raw: event.raw, headers: event.headers });
  expect(reply.body.status).toBe("completed");
  return reply.body.runId as string;
}

describe("attachments", () => {
  it("downloads through the producing channel's resolveAttachment into blobs and /files, and no other channel's", async () => {
    const files = await captureServer(({ path }) => (path === "/doc.txt" ? { status: 200, body: "quarterly numbers", headers: { "content-type": "text/plain" } } : { status: 404 }));
    const blob = new LocalBlobStore({ directory: join(tempDir(), "blobs") });
    // The test servers listen on loopback, which downloads reach only when it is listed by name.
    const host = await startHost(bundle, { blob, attachments: { allowedHosts: ["127.0.0.1"] } });
    const runId = await sendWithAttachments(host.url, "att-1", [{ id: "a1", url: `${files.url}/doc.txt`, filename: "Q3 report.txt" }]);

    expect(files.requests[0]!.headers.authorization).toBe("Bearer provider-download-token");
    const record = await host.runtime.state.files.getFileRecord(`/files/attachments/${runId}/a1/Q3_report.txt`);
    expect(record).toMatchObject({ size: 17, contentType: "text/plain", runId });
    expect(new TextDecoder().decode((await blob.get(record!.blobKey))!.body)).toBe("quarterly numbers");
    const events = await host.runtime.listEvents(runId);
    expect(events.find((event) => event.type === "attachment.stored")?.data).toMatchObject({ attachmentId: "a1", size: 17 });
    // The other channel module was never consulted.
    expect((globalThis as { __otherResolved?: number }).__otherResolved).toBeUndefined();
  });

  it("stores an attachment whose channel-given content type a blob store would refuse, under its media type, else the server's", async () => {
    const files = await captureServer(() => ({ status: 200, body: "report body", headers: { "content-type": "text/html" } }));
    const blob = new LocalBlobStore({ directory: join(tempDir(), "blobs") });
    const host = await startHost(bundle, { blob, attachments: { allowedHosts: ["127.0.0.1"] } });
    const runId = await sendWithAttachments(host.url, "att-types", [
      // A non-ASCII file name in a parameter: the media type is kept.
      { id: "named", url: `${files.url}/named`, filename: "named.txt", contentType: 'text/plain; name="\u5831\u544a.txt"' },
      // A line break: the media type before it is kept.
      { id: "broken", url: `${files.url}/broken`, filename: "broken.txt", contentType: "text/csv\r\nX-Injected: 1" },
      // Nothing usable: the server's type is used.
      { id: "garbled", url: `${files.url}/garbled`, filename: "garbled.txt", contentType: "\u30c6\u30ad\u30b9\u30c8" },
    ]);
    await waitFor(async () => ((await host.runtime.listEvents(runId)).filter((event) => event.type.startsWith("attachment.")).length === 3 ? true : undefined));
    const events = await host.runtime.listEvents(runId);
    expect(events.filter((event) => event.type === "attachment.failed")).toEqual([]);
    const types = Object.fromEntries((await host.runtime.state.files.listFileRecords({ prefix: `/files/attachments/${runId}/` })).map((record) => [record.path.split("/").at(-1), record.contentType]));
    expect(types).toEqual({ "named.txt": "text/plain", "broken.txt": "text/csv", "garbled.txt": "text/html" });
    const record = await host.runtime.state.files.getFileRecord(`/files/attachments/${runId}/named/named.txt`);
    expect(await blob.get(record!.blobKey)).toMatchObject({ contentType: "text/plain" });
  });

  it("stores attachments whose ids or names clean to the same text apart, each downloaded", async () => {
    const files = await captureServer(({ path }) => ({ status: 200, body: `bytes of ${path}` }));
    const host = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }), attachments: { allowedHosts: ["127.0.0.1"] } });
    const long = "x".repeat(100);
    const runId = await sendWithAttachments(host.url, "att-collide", [
      { id: "msg1:file", url: `${files.url}/one`, filename: "report.txt" },
      { id: "msg1/file", url: `${files.url}/two`, filename: "report.txt" },
      { id: "a", url: `${files.url}/three`, filename: "b-c.txt" },
      { id: "a-b", url: `${files.url}/four`, filename: "c.txt" },
      { id: `${long}1`, url: `${files.url}/five` },
      { id: `${long}2`, url: `${files.url}/six` },
    ]);
    await waitFor(async () => ((await host.runtime.listEvents(runId)).filter((event) => event.type === "attachment.stored").length === 6 ? true : undefined));
    expect(files.requests.map((request) => request.path).sort()).toEqual(["/five", "/four", "/one", "/six", "/three", "/two"]);
    const records = await host.runtime.state.files.listFileRecords({ prefix: `/files/attachments/${runId}/` });
    expect(new Set(records.map((record) => record.path)).size).toBe(6);
  });

  it("caps the size, refuses hosts off the allowlist, and lets the run go on without the file", async () => {
    const files = await captureServer(() => ({ status: 200, body: "x".repeat(5000) }));
    const host = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }), attachments: { maxBytes: 1000, allowedHosts: ["127.0.0.1"] } });
    const big = await sendWithAttachments(host.url, "att-big", [{ id: "big", url: `${files.url}/big.bin` }]);
    const failed = (await host.runtime.listEvents(big)).find((event) => event.type === "attachment.failed");
    expect(failed?.data).toMatchObject({ attachmentId: "big", code: "AL_ERR_ATTACHMENT_TOO_LARGE" });
    expect(await host.runtime.state.files.listFileRecords({ prefix: `/files/attachments/${big}` })).toEqual([]);

    const strict = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }), attachments: { allowedHosts: ["files.example.com"] } });
    const before = files.requests.length;
    const refused = await sendWithAttachments(strict.url, "att-host", [{ id: "h", url: `${files.url}/x` }]);
    expect((await strict.runtime.listEvents(refused)).find((event) => event.type === "attachment.failed")?.data).toMatchObject({ code: "AL_ERR_ATTACHMENT_REFUSED" });
    expect(files.requests.length).toBe(before);
  });

  it("follows a redirect to another origin without the channel's credentials", async () => {
    const target = await captureServer(() => ({ status: 200, body: "moved bytes" }));
    const origin = await captureServer(() => ({ status: 302, headers: { location: `${target.url}/final` } }));
    const host = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }), attachments: { allowedHosts: ["127.0.0.1"] } });
    const runId = await sendWithAttachments(host.url, "att-redirect", [{ id: "r", url: `${origin.url}/start` }]);
    await waitFor(() => (target.requests.length > 0 ? true : undefined));
    expect(origin.requests[0]!.headers.authorization).toBe("Bearer provider-download-token");
    expect(target.requests[0]!.headers.authorization).toBeUndefined();
    expect(await host.runtime.state.files.getFileRecord(`/files/attachments/${runId}/r/attachment`)).toMatchObject({ size: 11 });
  });

  it("refuses by default every spelling of loopback, private and metadata addresses; the canary on 127.0.0.1 sees no request", async () => {
    const canary = await captureServer(() => ({ status: 200, body: "secret" }));
    const port = new URL(canary.url).port;
    const spellings = [
      `http://127.0.0.1:${port}/x`,
      `http://localhost:${port}/x`,
      `http://127.1:${port}/x`,
      `http://2130706433:${port}/x`,
      `http://0.0.0.0:${port}/x`,
      `http://[::1]:${port}/x`,
      `http://[::ffff:127.0.0.1]:${port}/x`,
      `http://[::ffff:7f00:1]:${port}/x`,
      `http://[0:0:0:0:0:ffff:127.0.0.1]:${port}/x`,
      `http://[::7f00:1]:${port}/x`,
      `http://[::ffff:169.254.169.254]:${port}/x`,
      `http://[::ffff:a9fe:a9fe]:${port}/x`,
      `http://[::ffff:192.168.1.1]:${port}/x`,
      `http://[fec0::1]:${port}/x`,
      `http://[64:ff9b::7f00:1]:${port}/x`,
      `http://169.254.169.254:${port}/x`,
    ];
    const host = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }) });
    const runId = await sendWithAttachments(host.url, "att-internal", spellings.map((url, index) => ({ id: `s${index}`, url })));
    const failed = await waitFor(async () => {
      const events = (await host.runtime.listEvents(runId)).filter((event) => event.type === "attachment.failed");
      return events.length === spellings.length ? events : undefined;
    });
    expect(failed.filter((event) => event.data.code !== "AL_ERR_ATTACHMENT_REFUSED").map((event) => event.data)).toEqual([]);
    expect(String(failed[0]!.data.error)).toMatch(/AL_ERR_ATTACHMENT_REFUSED: attachment s0: AL_ERR_OUTBOUND_ADDRESS_REFUSED: host 127\.0\.0\.1 is a loopback address/);
    expect(await host.runtime.state.files.listFileRecords({ prefix: `/files/attachments/${runId}` })).toEqual([]);
    expect(canary.requests).toHaveLength(0);
  });

  it("re-checks a redirect's target: an allowed host cannot bounce a download to loopback", async () => {
    const canary = await captureServer(() => ({ status: 200, body: "secret" }));
    const bouncer = await captureServer(() => ({ status: 302, headers: { location: `http://[::ffff:127.0.0.1]:${new URL(canary.url).port}/x` } }));
    const host = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }), attachments: { allowedHosts: ["127.0.0.1"] } });
    const runId = await sendWithAttachments(host.url, "att-bounce", [{ id: "b", url: `${bouncer.url}/start` }]);
    const failed = await waitFor(async () => (await host.runtime.listEvents(runId)).find((event) => event.type === "attachment.failed"));
    expect(failed.data).toMatchObject({ code: "AL_ERR_ATTACHMENT_REFUSED" });
    expect(bouncer.requests).toHaveLength(1);
    expect(canary.requests).toHaveLength(0);
  });
});
