import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, startHost, tempDir } from "./support/host.js";

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

let bundle: RuntimeBundle;
beforeAll(async () => {
  const agentDir = join(tempDir("al-channel-request-"), "agent");
  mkdirSync(join(agentDir, "channels"), { recursive: true });
  writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", instructions: "Test." });\n`);
  writeFileSync(join(agentDir, "channels", "challenge.ts"), CHALLENGE_CHANNEL);
  bundle = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
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
