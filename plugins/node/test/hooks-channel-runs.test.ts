import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { LocalBlobStore } from "@assemblyline-agents/local";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, captureServer, startHost, tempDir, waitFor } from "./support/host.js";

const AGENT = {
  "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", instructions: "Test." });\n`,
  "channels/inbox.ts": `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/inbox", methods: ["POST"] });
export function normalizeHttp(request) {
  const body = request.body;
  return { eventId: body.id, conversationId: body.conversation, message: body.text, attachments: body.attachments };
}
`,
  "hooks/audit.ts": `import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { "*"(event) { (globalThis.__hookAudit ??= []).push(event.runId + "#" + event.seq + ":" + event.type); } } });
`,
};

let bundle: RuntimeBundle;
beforeAll(async () => {
  const agentDir = join(tempDir("al-hook-agent-"), "agent");
  for (const [file, text] of Object.entries(AGENT)) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  bundle = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
});

const audit = () => ((globalThis as { __hookAudit?: string[] }).__hookAudit ??= []);

describe("hooks on channel runs", () => {
  it("see every event of a channel turn once, in order, the host's attachment events included, however often the provider delivers it", async () => {
    audit().length = 0;
    onTestFinished(() => void (audit().length = 0));
    const files = await captureServer(() => ({ status: 200, body: "bytes", headers: { "content-type": "text/plain" } }));
    const host = await startHost(bundle, { blob: new LocalBlobStore({ directory: join(tempDir(), "blobs") }), attachments: { allowedHosts: ["127.0.0.1"] } });
    const turn = { id: "evt-7", conversation: "c-7", text: "echo: hi", attachments: [{ id: "a1", url: `${files.url}/a1.txt` }] };
    // The provider retries while the first delivery is still being answered, and once more later.
    const replies = await Promise.all([1, 2, 3].map(() => call(`${host.url}/inbox?wait=10`, { body: turn })));
    const runId = replies[0]!.body.runId as string;
    expect(replies.map((reply) => reply.body.runId)).toEqual([runId, runId, runId]);
    await waitFor(async () => (await host.runtime.getRun(runId)).status === "completed" || undefined, 10_000, "the run to complete");
    expect((await call(`${host.url}/inbox`, { body: turn })).body).toMatchObject({ runId, duplicate: true });
    expect((await host.runtime.state.runs.listRuns()).runs).toHaveLength(1);
    const recorded = await host.runtime.listEvents(runId);
    expect(recorded.map((event) => event.type)).toContain("attachment.stored");
    await waitFor(() => audit().length >= recorded.length || undefined, 5_000, "the hook to see every event");
    expect(audit()).toEqual(recorded.map((event) => `${runId}#${event.seq}:${event.type}`));
  });

  it("get, when a host starts, the events a stopped process recorded for a resting run and never delivered", async () => {
    audit().length = 0;
    onTestFinished(() => void (audit().length = 0));
    const state = new InMemoryStateAdapter();
    // A process died after recording the run's pause for approval, before its hooks ran (a hook that pages the approver, say).
    const { run } = await state.createRun({ id: "run_paused", agentId: bundle.manifest.agent.id, agentRevision: bundle.manifest.agentRevision, conversationId: null, modelSpec: "test/model", input: { message: "go", metadata: {} } });
    await state.appendEvents(run.id, [{ type: "run.waiting_approval", data: {} }], { run: { status: "waiting_approval" } });
    const host = await startHost(bundle, { state });
    await waitFor(() => audit().length >= 2 || undefined, 5_000, "the hook to see the paused run's events");
    expect(audit()).toEqual(["run_paused#1:run.created", "run_paused#2:run.waiting_approval"]);
    expect((await host.runtime.state.runs.getRun("run_paused"))!.observedSeq).toBe(2);
    expect(host.logger.events("recovery.observers_caught_up")).toHaveLength(1);
  });
});
