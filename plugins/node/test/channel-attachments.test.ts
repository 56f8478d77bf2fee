import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { LocalBlobStore } from "@assemblyline-agents/local";
import { buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, captureServer, startHost, tempDir } from "./support/host.js";

// A provider whose events name files by id only (as chat providers' file ids do): the channel's
// resolveAttachment finds the download URL and the file's name.
const FILES_CHANNEL = `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/files-provider", methods: ["POST"] });
export function normalizeHttp(request) {
  const body = request.body;
  // The provider's own fields ride along in the turn's metadata, as channels often pass them.
  return { eventId: body.id, conversationId: body.conversation, message: body.text, attachments: body.attachments, ...(body.fields ? { metadata: body.fields } : {}) };
}
export function resolveAttachment(attachment) {
  return { url: process.env.FILES_PROVIDER_URL + "/files/" + attachment.id, filename: "Q3 report.pdf" };
}
`;

// A provider whose downloads must stay on the hosts it names, redirects included.
const RESTRICTED_CHANNEL = `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/restricted-provider", methods: ["POST"] });
export function normalizeHttp(request) {
  const body = request.body;
  return { eventId: body.id, conversationId: body.conversation, message: body.text, attachments: body.attachments };
}
export function resolveAttachment(attachment) {
  return { url: attachment.url, allowedHosts: attachment.id === "unreadable" ? "127.0.0.1" : ["127.0.0.1"] };
}
`;

// A provider whose file lookup never answers (a provider API that hangs): it keeps the signal it is given.
const HANGING_CHANNEL = `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/hanging-provider", methods: ["POST"] });
export function normalizeHttp(request) {
  const body = request.body;
  return { eventId: body.id, conversationId: body.conversation, message: body.text, ...(body.attachments ? { attachments: body.attachments } : {}) };
}
export function resolveAttachment(attachment, ctx) {
  (globalThis.__hangingLookups ??= []).push(ctx.signal);
  return new Promise(() => {});
}
`;

let bundle: RuntimeBundle;
beforeAll(async () => {
  const agentDir = join(tempDir("al-channel-agent-"), "agent");
  mkdirSync(join(agentDir, "channels"), { recursive: true });
  writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", instructions: "Test." });\n`);
  writeFileSync(join(agentDir, "channels", "files.ts"), FILES_CHANNEL);
  writeFileSync(join(agentDir, "channels", "restricted.ts"), RESTRICTED_CHANNEL);
  writeFileSync(join(agentDir, "channels", "hanging.ts"), HANGING_CHANNEL);
  bundle = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
});

describe("channel attachments", () => {
  it("stores an attachment under the filename its channel's resolveAttachment returns", async () => {
    const provider = await captureServer(({ path }) => (path === "/files/F123" ? { status: 200, body: "%PDF-1.7 numbers", headers: { "content-type": "application/pdf" } } : { status: 404 }));
    process.env.FILES_PROVIDER_URL = provider.url;
    onTestFinished(() => {
      delete process.env.FILES_PROVIDER_URL;
    });
    const blob = new LocalBlobStore({ directory: join(tempDir(), "blobs") });
    const host = await startHost(bundle, { blob, attachments: { allowedHosts: ["127.0.0.1"] } });
    const reply = await call(`${host.url}/files-provider?wait=10`, {
      body: { id: "evt-file-1", conversation: "c-files", text: "echo: see attached", attachments: [{ id: "F123" }] },
    });
    expect(reply.body.status).toBe("completed");
    const runId = reply.body.runId as string;
    const path = `/files/attachments/${runId}/F123/Q3_report.pdf`;
    const stored = (await host.runtime.listEvents(runId)).find((event) => event.type === "attachment.stored");
    expect(stored?.data).toMatchObject({ attachmentId: "F123", path, size: 16, contentType: "application/pdf" });
    const record = await host.runtime.state.files.getFileRecord(path);
    expect(new TextDecoder().decode((await blob.get(record!.blobKey))!.body)).toBe("%PDF-1.7 numbers");
  });

  it("keeps the event id, user and attachments the turn names when its metadata holds the same keys, and downloads only the turn's attachments", async () => {
    const provider = await captureServer(({ path }) => ({ status: 200, body: `bytes of ${path}`, headers: { "content-type": "text/plain" } }));
    process.env.FILES_PROVIDER_URL = provider.url;
    onTestFinished(() => {
      delete process.env.FILES_PROVIDER_URL;
    });
    const host = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }), attachments: { allowedHosts: ["127.0.0.1"] } });
    const fields = { eventId: "spoofed", user: { id: "admin" }, attachments: [{ id: "SECRET", url: `${provider.url}/internal` }], thread: "t-9" };
    const reply = await call(`${host.url}/files-provider?wait=10`, {
      body: { id: "evt-file-2", conversation: "c-files", text: "echo: see attached", attachments: [{ id: "F123" }], fields },
    });
    expect(reply.body.status).toBe("completed");
    const run = await host.runtime.state.runs.getRun(reply.body.runId);
    expect(run?.input.channel?.metadata).toEqual({ eventId: "evt-file-2", attachments: [{ id: "F123" }], thread: "t-9" });
    expect(provider.requests.map((request) => request.path)).toEqual(["/files/F123"]);
    expect((await host.runtime.listEvents(reply.body.runId)).filter((event) => event.type.startsWith("attachment.")).map((event) => event.data.attachmentId)).toEqual(["F123"]);
    expect(host.logger.events("channel.metadata_reserved")).toMatchObject([{ fields: { channel: "files", keys: ["eventId", "user", "attachments"] } }]);
  });

  it("refuses a download that a redirect takes off the hosts its channel's resolveAttachment allows, though the host's allowlist admits it", async () => {
    const elsewhere = await captureServer(() => ({ status: 200, body: "off the channel's hosts" }));
    const provider = await captureServer(({ path }): { status: number; body?: string; headers: Record<string, string> } =>
      path === "/redirect" ? { status: 302, headers: { location: `http://localhost:${new URL(elsewhere.url).port}/payload` } } : { status: 200, body: "on the channel's host", headers: { "content-type": "text/plain" } },
    );
    const host = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }), attachments: { allowedHosts: ["127.0.0.1", "localhost"] } });
    const reply = await call(`${host.url}/restricted-provider?wait=10`, {
      body: {
        id: "evt-restricted-1",
        conversation: "c-restricted",
        text: "echo: see attached",
        attachments: [
          { id: "moved", url: `${provider.url}/redirect` },
          { id: "direct", url: `${provider.url}/direct` },
          { id: "unreadable", url: `${provider.url}/direct` },
        ],
      },
    });
    expect(reply.body.status).toBe("completed");
    const events = (await host.runtime.listEvents(reply.body.runId)).filter((event) => event.type.startsWith("attachment."));
    expect(events).toMatchObject([
      { type: "attachment.failed", data: { attachmentId: "moved", code: "AL_ERR_ATTACHMENT_REFUSED" } },
      { type: "attachment.stored", data: { attachmentId: "direct" } },
      // A list the host cannot read fails closed rather than downloading without it.
      { type: "attachment.failed", data: { attachmentId: "unreadable", code: "AL_ERR_ATTACHMENT_REFUSED" } },
    ]);
    expect(String(events[0]!.data.error)).toMatch(/host localhost is not in the policy's withinHosts/);
    expect(elsewhere.requests).toEqual([]);
  });

  it("gives up a resolveAttachment that never answers after attachments.timeoutMs: the attachment fails, the run starts, and the conversation's next turn runs", async () => {
    const lookups: AbortSignal[] = [];
    (globalThis as { __hangingLookups?: AbortSignal[] }).__hangingLookups = lookups;
    onTestFinished(() => {
      delete (globalThis as { __hangingLookups?: AbortSignal[] }).__hangingLookups;
    });
    const host = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }), attachments: { timeoutMs: 500 }, maxConcurrentRuns: 1 });
    const first = await call(`${host.url}/hanging-provider?wait=10`, {
      body: { id: "evt-hanging-1", conversation: "c-hanging", text: "echo: see attached", attachments: [{ id: "F-hangs" }] },
    });
    expect(first.body.status).toBe("completed");
    const events = (await host.runtime.listEvents(first.body.runId)).filter((event) => event.type.startsWith("attachment."));
    expect(events).toMatchObject([{ type: "attachment.failed", data: { attachmentId: "F-hangs", code: "AL_ERR_ATTACHMENT_DOWNLOAD" } }]);
    expect(String(events[0]!.data.error)).toMatch(/channel hanging's resolveAttachment did not answer within 500 ms/);
    expect(host.logger.events("attachment.failed")).toMatchObject([{ fields: { runId: first.body.runId, attachmentId: "F-hangs", code: "AL_ERR_ATTACHMENT_DOWNLOAD" } }]);
    // The channel was told to stop looking.
    expect(lookups).toHaveLength(1);
    expect(lookups[0]!.aborted).toBe(true);

    const next = await call(`${host.url}/hanging-provider?wait=10`, { body: { id: "evt-hanging-2", conversation: "c-hanging", text: "echo: and now?" } });
    expect(next.body.status).toBe("completed");
  });
});
