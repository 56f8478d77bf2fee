import { randomUUID } from "node:crypto";
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { StateAdapter } from "@assemblyline-agents/core";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { FIXTURE_AGENT, SCRIPTS, call, routedHarness, startHost, tempDir, waitFor, type Reply } from "./support/host.js";

/**
 * Two agents whose hosts share one state store (as two agents on one database do). Agent B's id
 * starts with agent A's, without the "/" of a subagent: it must not pass for one of A's subagents.
 */
const AGENT_A = "host-agent";
const AGENT_B = "host-agent-eu";

let bundleA: RuntimeBundle;
let bundleB: RuntimeBundle;
beforeAll(async () => {
  [bundleA, bundleB] = await Promise.all([
    agentBundle(AGENT_A, {
      "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Looks facts up." });\n`,
    }),
    agentBundle(AGENT_B),
  ]);
});

/** The fixture agent under another id (plus `files`), built in a temp folder. */
async function agentBundle(id: string, files: Record<string, string> = {}): Promise<RuntimeBundle> {
  const agentDir = join(tempDir("al-host-agent-"), "agent");
  cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
  const agentFile = join(agentDir, "agent.ts");
  const source = readFileSync(agentFile, "utf8");
  if (!source.includes('id: "host-agent"')) throw new Error(`the fixture's agent.ts no longer declares id: "host-agent"; give ${id} another way`);
  writeFileSync(agentFile, source.replace('id: "host-agent"', `id: ${JSON.stringify(id)}`));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(agentDir, file)), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  const { artifactRoot } = await buildAgent(agentDir);
  return loadRuntimeBundle(artifactRoot);
}

/** The parent hands "echo: ..." to its researcher, whose run echoes. */
const harness = routedHarness({
  ...SCRIPTS,
  spawn: { turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "echo: look it up" } }] }, { text: "the researcher answered" }] },
});

const stores: Record<string, () => Promise<StateAdapter>> = {
  "in-memory state": async () => new InMemoryStateAdapter(),
  "file state": async () => FileStateAdapter.open({ directory: tempDir("al-shared-state-") }),
};

/** Hosts A and B on one store, which the second host to stop closes; both stop when the test ends. */
async function twoAgents(open: () => Promise<StateAdapter>) {
  const state = await open();
  const close = state.close!.bind(state);
  let holders = 2;
  state.close = async () => {
    holders -= 1;
    if (holders === 0) await close();
  };
  const a = await startHost(bundleA, { state, agentHarness: harness });
  const b = await startHost(bundleB, { state, agentHarness: harness });
  return { a, b, state };
}

const send = (url: string, message: string, conversationId?: string, headers: Record<string, string> = {}) =>
  call(`${url}/message?wait=10`, { body: { message, ...(conversationId ? { conversationId } : {}) }, headers });

/** What a read answered, with the run id in it replaced: the answer to `runId`, compared with another id's. */
function answered(reply: Reply, runId: string): { status: number; contentType: string | null; body: string } {
  return { status: reply.status, contentType: reply.headers.get("content-type"), body: JSON.stringify(reply.body).replaceAll(runId, "<run>") };
}

/** Every route of the host that reads one run (the same request id, so bodies compare whole). */
const READS = ["/runs/:id", "/runs/:id/events", "/runs/:id/events?afterSeq=1", "/inspector/api/runs/:id"];
const DECISIONS: Array<[string, unknown]> = [
  ["/runs/:id/approve", {}],
  ["/runs/:id/deny", { reason: "no" }],
  ["/runs/:id/answer", { answer: "blue" }],
];
const headers = { "x-request-id": "same-request" };

describe.each(Object.entries(stores))("a host on a store shared with another agent (%s)", (_name, open) => {
  it("answers every read and decision about the other agent's run exactly as about an id no run has, and leaves the run as it was", async () => {
    const { a, b } = await twoAgents(open);
    const theirs = (await send(b.url, "ask: theirs")).body.runId as string;
    expect((await call(`${b.url}/runs/${theirs}`)).body.result).toMatchObject({ status: "waiting_input" });
    const unknown = `run_${randomUUID()}`;

    for (const path of READS) {
      const foreign = await call(`${a.url}${path.replace(":id", theirs)}`, { headers });
      const missing = await call(`${a.url}${path.replace(":id", unknown)}`, { headers });
      expect(foreign.status, path).toBe(404);
      expect(answered(foreign, theirs), path).toEqual(answered(missing, unknown));
      expect(JSON.stringify(foreign.body)).not.toContain(AGENT_B);
    }
    for (const [path, body] of DECISIONS) {
      const foreign = await call(`${a.url}${path.replace(":id", theirs)}`, { body, headers });
      const missing = await call(`${a.url}${path.replace(":id", unknown)}`, { body, headers });
      expect(foreign.status, path).toBe(404);
      expect(answered(foreign, theirs), path).toEqual(answered(missing, unknown));
    }

    // Its own host still shows it, untouched by A's refused decisions.
    const view = (await call(`${b.url}/runs/${theirs}`)).body;
    expect(view.result).toMatchObject({ status: "waiting_input", question: { question: { question: "Which colour?" } } });
    expect(view.events.filter((event: { type: string }) => ["approval.granted", "approval.denied", "input.received"].includes(event.type))).toEqual([]);
    expect((await call(`${b.url}/inspector/api/runs/${theirs}`)).status).toBe(200);
  });

  it("lists none of the other agent's runs in GET /runs or the inspector, even in a conversation of the same id", async () => {
    const { a, b } = await twoAgents(open);
    const mine = (await send(a.url, "echo: mine", "shared")).body.runId as string;
    const theirs = (await send(b.url, "echo: theirs", "shared")).body.runId as string;
    const paused = (await send(b.url, "ask: theirs too")).body.runId as string;

    const ids = (reply: Reply) => reply.body.runs.map((run: { id: string }) => run.id);
    expect(ids(await call(`${a.url}/runs`))).toEqual([mine]);
    expect(ids(await call(`${a.url}/runs?conversationId=shared`))).toEqual([mine]);
    expect(ids(await call(`${a.url}/runs?status=waiting_input`))).toEqual([]);
    const inspector = (await call(`${a.url}/inspector/api/runs`)).body;
    expect(inspector.agent.id).toBe(AGENT_A);
    expect(ids({ body: inspector } as Reply)).toEqual([mine]);
    expect(ids(await call(`${a.url}/inspector/api/runs?status=waiting_input`))).toEqual([]);

    expect(ids(await call(`${b.url}/runs`))).toEqual([paused, theirs]);
    expect(ids(await call(`${b.url}/inspector/api/runs`))).toEqual([paused, theirs]);
  });

  it("still shows its own runs and its subagents' runs, which the other agent's host reads as unknown", async () => {
    const { a, b } = await twoAgents(open);
    const parent = await send(a.url, "spawn: research");
    expect(parent.body).toMatchObject({ status: "completed", response: { text: "the researcher answered" } });
    const started = (await call(`${a.url}/runs/${parent.body.runId}`)).body.events.find((event: { type: string }) => event.type === "subagent.started");
    const child = started.data.childRunId as string;
    const unknown = `run_${randomUUID()}`;

    for (const runId of [parent.body.runId as string, child]) {
      for (const path of READS) expect((await call(`${a.url}${path.replace(":id", runId)}`)).status, `${path} of ${runId}`).toBe(200);
      for (const path of READS) {
        const foreign = await call(`${b.url}${path.replace(":id", runId)}`, { headers });
        expect(answered(foreign, runId), path).toEqual(answered(await call(`${b.url}${path.replace(":id", unknown)}`, { headers }), unknown));
      }
    }
    const view = (await call(`${a.url}/runs/${child}`)).body;
    expect(view.run).toMatchObject({ id: child, agentId: `${AGENT_A}/researcher`, status: "completed" });
    expect(view.result.response.text).toBe("hello back");
  });

  it("streams the events of its own and its subagents' runs, and none of the other agent's", async () => {
    const { a, b, state } = await twoAgents(open);
    const all = await openStream(`${a.url}/inspector/api/stream`);
    const mine = (await send(a.url, "echo: mine")).body.runId as string;
    const theirs = (await send(b.url, "ask: theirs")).body.runId as string;
    await all.until(`"runId":"${mine}","seq":`);
    const one = await openStream(`${a.url}/inspector/api/stream?runId=${theirs}`);
    const nobody = await openStream(`${a.url}/inspector/api/stream?runId=run_${randomUUID()}`);

    // B's host drives B's runs, so A's runtime records none of their events. However an event of
    // another agent's run came to reach A's event hook, the stream does not send it: the check is
    // the stream's own, not a consequence of who drives what.
    const context = { agentId: AGENT_A, agentName: AGENT_A, agentRevision: bundleA.manifest.agentRevision };
    const [foreignEvent] = await state.listEvents(theirs, { afterSeq: 0, limit: 1 });
    await a.runtime.hooks.event.promise(foreignEvent!, context);
    // A subagent's run is the agent's: its events are sent (here a stored run of the shape spawning gives).
    const sub = `run_${randomUUID()}`;
    await state.createRun({ id: sub, agentId: `${AGENT_A}/researcher`, agentRevision: bundleA.manifest.agentRevision, modelSpec: "scripted:unused", input: { message: "echo: x", metadata: {} } });
    const [subEvent] = await state.listEvents(sub);
    await a.runtime.hooks.event.promise(subEvent!, context);
    await all.until(`"runId":"${sub}"`);
    // Once more, after the other run's agent is known: still not sent.
    await a.runtime.hooks.event.promise(foreignEvent!, context);
    const again = (await send(a.url, "echo: mine again")).body.runId as string;
    await all.until(`"runId":"${again}","seq":`);

    expect(all.text()).not.toContain(theirs);
    expect(one.text()).toBe(": connected\n\n");
    expect(nobody.text()).toBe(": connected\n\n");
  });

  it("refuses a turn whose event id already started the other agent's run, instead of answering with that run", async () => {
    const { a, b } = await twoAgents(open);
    const theirs = await send(b.url, "echo: secret reply", undefined, { "idempotency-key": "evt-1" });
    expect(theirs.body).toMatchObject({ status: "completed", duplicate: false });

    const refused = await send(a.url, "echo: mine", undefined, { "idempotency-key": "evt-1" });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("AL_ERR_INGRESS_EVENT_TAKEN");
    expect(JSON.stringify(refused.body)).not.toContain(theirs.body.runId);
    expect(a.logger.events("ingress.event_taken")).toHaveLength(1);
    // The other agent's run stays as it was; A's own duplicates still get A's run.
    expect((await call(`${b.url}/runs/${theirs.body.runId}`)).body.result).toMatchObject({ status: "completed", response: { text: "hello back" } });
    const first = await send(a.url, "echo: mine", undefined, { "idempotency-key": "evt-2" });
    const duplicate = await send(a.url, "echo: mine", undefined, { "idempotency-key": "evt-2" });
    expect(duplicate.body).toMatchObject({ runId: first.body.runId, duplicate: true, status: "completed" });
  });
});

/** An inspector event stream, read as it arrives until the test ends. */
async function openStream(url: string): Promise<{ text(): string; until(part: string): Promise<void> }> {
  const abort = new AbortController();
  const response = await fetch(url, { signal: abort.signal });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const reading = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        text += decoder.decode(value, { stream: true });
      }
    } catch {
      // Aborted at the end of the test.
    }
  })();
  onTestFinished(async () => {
    abort.abort();
    await reading;
  });
  return {
    text: () => text,
    until: async (part) => {
      await waitFor(() => text.includes(part) || undefined, 10_000, part);
    },
  };
}
