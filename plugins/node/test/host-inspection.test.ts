import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost, tempDir } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

const send = (url: string, message: string, conversationId?: string) =>
  call(`${url}/message?wait=10`, { body: { message, ...(conversationId ? { conversationId } : {}) } });

describe("/runs inspection", () => {
  it("lists runs newest first with status and conversation filters and cursor paging", async () => {
    const host = await startHost(bundle);
    const inA: string[] = [];
    for (let i = 0; i < 3; i += 1) inA.push((await send(host.url, `echo: ${i}`, "A")).body.runId);
    const paused = (await send(host.url, "approve: x", "B")).body.runId;

    const first = await call(`${host.url}/runs?conversationId=A&limit=2`);
    expect(first.body.runs.map((run: { id: string }) => run.id)).toEqual([inA[2], inA[1]]);
    expect(first.body.next).toMatch(/^\/runs\?conversationId=A&limit=2&cursor=/);
    const second = await call(`${host.url}${first.body.next}`);
    expect(second.body.runs.map((run: { id: string }) => run.id)).toEqual([inA[0]]);
    expect(second.body.nextCursor).toBeNull();

    expect((await call(`${host.url}/runs?status=waiting_approval`)).body.runs.map((run: { id: string }) => run.id)).toEqual([paused]);
    expect((await call(`${host.url}/runs?status=completed,failed`)).body.runs).toHaveLength(3);
    expect((await call(`${host.url}/runs?status=completed&status=waiting_approval`)).body.runs).toHaveLength(4);
  });

  it("shows one run with its events, tool calls, checkpoint, deliveries, usage and timeline", async () => {
    const host = await startHost(bundle);
    const { runId } = (await send(host.url, "approve: show me", "C")).body;
    const pausedView = (await call(`${host.url}/runs/${runId}`)).body;
    expect(pausedView.result).toMatchObject({ status: "waiting_approval", pendingApprovals: [{ toolName: "publish" }] });
    expect(pausedView.checkpoint).toMatchObject({ runId, continuation: { harness: "scripted" } });
    expect(pausedView.toolCalls).toMatchObject([{ toolName: "publish", status: "waiting_approval" }]);

    const approved = await call(`${host.url}/runs/${runId}/approve`, { body: { actor: "ops@example.com" } });
    expect(approved.body).toMatchObject({ status: "completed", response: { text: "published" } });
    const view = (await call(`${host.url}/runs/${runId}`)).body;
    expect(view.run).toMatchObject({ id: runId, status: "completed", conversationId: "C" });
    expect(view.events.map((event: { seq: number }) => event.seq)).toEqual(view.events.map((_: unknown, index: number) => index + 1));
    expect(view.events.find((event: { type: string }) => event.type === "approval.granted").data.actor).toBe("ops@example.com");
    expect(view.toolCalls).toMatchObject([{ toolName: "publish", status: "completed", output: { published: "status" } }]);
    expect(view.checkpoint).toBeNull();
    // The message route has no deliver(): nothing is owed beyond the reply this run holds.
    expect(view.deliveries).toEqual([]);
    expect(view.usage).toMatchObject({ records: [], inputTokens: 0, outputTokens: 0, costUsd: 0 });
    expect(view.timeline[0]).toMatchObject({ seq: 1, type: "run.created", line: expect.stringMatching(/^1\s+run\.created/) });
    expect(view.timeline.at(-1).line).toMatch(/run\.completed\s+published/);

    const tail = (await call(`${host.url}/runs/${runId}/events?afterSeq=${view.events.length - 1}`)).body.events;
    expect(tail.map((event: { type: string }) => event.type)).toEqual(["run.completed"]);
  });

  it("shows no channel delivery data (an interaction token) in /runs, /runs/:id or /runs/:id/events; the channel's name and metadata stay", async () => {
    const state = new InMemoryStateAdapter();
    const token = "interaction-token-that-posts-as-the-bot";
    const channel = { name: "discord", metadata: { guild: "g1" }, delivery: { discord: { interactionToken: token } } };
    const { run } = await state.createRun({
      id: "run_from_discord",
      agentId: bundle.manifest.agent.id,
      agentRevision: bundle.manifest.agentRevision,
      modelSpec: bundle.manifest.agent.model,
      input: { message: "echo: hi", metadata: {}, channel },
      status: "completed",
    });
    const host = await startHost(bundle, { state });
    const bodies = await Promise.all([`/runs`, `/runs/${run.id}`, `/runs/${run.id}/events`].map(async (path) => JSON.stringify((await call(`${host.url}${path}`)).body)));
    for (const body of bodies) expect(body).not.toContain(token);
    const shown = (await call(`${host.url}/runs/${run.id}`)).body;
    expect(shown.run.input.channel).toEqual({ name: "discord", metadata: { guild: "g1" } });
    expect(shown.events[0]).toMatchObject({ type: "run.created", data: { input: { message: "echo: hi", channel: { name: "discord", metadata: { guild: "g1" } } } } });
    // The store still has it, for the outbox.
    expect((await state.getRun(run.id))?.input.channel?.delivery).toEqual(channel.delivery);
  });

  it("denies and answers through their endpoints, and answers 202 when told not to wait", async () => {
    const host = await startHost(bundle);
    const toDeny = (await send(host.url, "approve: no")).body.runId;
    const denied = await call(`${host.url}/runs/${toDeny}/deny`, { body: { reason: "not today" } });
    expect(denied.body.status).toBe("completed");
    expect((await host.runtime.state.runs.listToolCalls(toDeny))[0]).toMatchObject({ status: "denied", output: { denied: true, reason: "not today" } });

    const asking = await send(host.url, "ask: colour");
    expect(asking.body).toMatchObject({ status: "waiting_input", question: { question: { question: "Which colour?" } } });
    const answered = await call(`${host.url}/runs/${asking.body.runId}/answer`, { body: { answer: "blue" } });
    expect(answered.body).toMatchObject({ status: "completed", response: { text: "thanks" } });

    const later = (await send(host.url, "approve-slow: later")).body.runId;
    const accepted = await call(`${host.url}/runs/${later}/approve?wait=0`, { body: {} });
    expect(accepted.status).toBe(202);
    expect(accepted.body.status).toBe("running");
  });
});

describe("probes and auth", () => {
  it("serves /healthz and /readyz; production puts /runs behind the token, and the probes only when asked to", async () => {
    const open = await startHost(bundle);
    expect((await call(`${open.url}/healthz`)).body).toEqual({ status: "ok" });
    expect((await call(`${open.url}/readyz`)).body).toMatchObject({ status: "ready", executing: 0, waiting: 0, ingressKillSwitch: false });

    const env = { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_BEARER_TOKEN: "t0k" };
    // As `assembly-line start` with a token runs: a platform's health check (fly.toml, railway.json) sends no header.
    const guarded = await startHost(bundle, { devMode: false, env });
    for (const path of ["/healthz", "/readyz"]) expect((await call(`${guarded.url}${path}`)).status, path).toBe(200);
    for (const path of ["/runs", "/admin/kill-switch", "/inspector/api/runs"]) expect((await call(`${guarded.url}${path}`)).status, path).toBe(401);
    for (const path of ["/healthz", "/readyz", "/runs", "/admin/kill-switch"]) {
      expect((await call(`${guarded.url}${path}`, { headers: { authorization: "Bearer t0k" } })).status, path).toBe(200);
    }
    const guardedProbes = [
      await startHost(bundle, { devMode: false, env, auth: { publicProbes: false } }),
      await startHost(bundle, { devMode: false, env: { ...env, ASSEMBLY_LINE_PUBLIC_PROBES: "false" } }),
    ];
    for (const host of guardedProbes) {
      for (const path of ["/healthz", "/readyz", "/runs"]) expect((await call(`${host.url}${path}`)).status, path).toBe(401);
      expect((await call(`${host.url}/readyz`, { headers: { authorization: "Bearer t0k" } })).status).toBe(200);
    }
    await expect(startHost(bundle, { devMode: false, env: { ...env, ASSEMBLY_LINE_PUBLIC_PROBES: "nope" } })).rejects.toMatchObject({ code: "AL_ERR_HOST_CONFIG" });

    const unconfigured = await startHost(bundle, { devMode: false });
    expect((await call(`${unconfigured.url}/healthz`)).status).toBe(200);
    expect((await call(`${unconfigured.url}/runs`)).body.error.code).toBe("AL_ERR_HOST_AUTH_REQUIRED");
  });

  it("refuses probes kept private (publicProbes: false) with 403 as /runs is in production without any auth, and says so at start", async () => {
    for (const options of [{ auth: { publicProbes: false } }, { env: { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_PUBLIC_PROBES: "false" } }]) {
      const host = await startHost(bundle, { devMode: false, ...options });
      for (const path of ["/healthz", "/readyz", "/runs"]) {
        const refused = await call(`${host.url}${path}`);
        expect(refused.status, path).toBe(403);
        expect(refused.body.error.code, path).toBe("AL_ERR_HOST_AUTH_REQUIRED");
      }
      expect(host.logger.events("security.inspection_refused").map((entry) => entry.msg)).toEqual([expect.stringContaining("/healthz and /readyz refuse requests")]);
    }
    // Dev mode without auth serves them to pages addressed to this machine, as it serves /runs.
    const dev = await startHost(bundle, { auth: { publicProbes: false } });
    expect((await call(`${dev.url}/healthz`)).status).toBe(200);
  });
});

describe("the ingress kill switch", () => {
  it("refuses new turns with 503 while engaged, keeps resumes going, and records who flipped it", async () => {
    const host = await startHost(bundle);
    const paused = (await send(host.url, "approve: before")).body.runId;
    const engaged = await call(`${host.url}/admin/kill-switch`, { body: { engaged: true, reason: "provider incident", actor: "alice" } });
    expect(engaged.body).toMatchObject({ engaged: true, actor: "alice", reason: "provider incident", auditEvent: { key: "ingress.killSwitch:host-agent", actor: "alice" } });
    const refused = await send(host.url, "echo: during");
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe("AL_ERR_INGRESS_DISABLED");
    expect((await call(`${host.url}/readyz`)).body.ingressKillSwitch).toBe(true);
    expect((await call(`${host.url}/runs/${paused}/approve`, { body: {} })).body.status).toBe("completed");

    await call(`${host.url}/admin/kill-switch`, { body: { engaged: false, reason: "resolved", actor: "bob" } });
    expect((await send(host.url, "echo: after")).status).toBe(200);
    const state = (await call(`${host.url}/admin/kill-switch`)).body;
    expect(state).toMatchObject({ engaged: false, actor: "bob" });
    expect(state.audit.map((event: { actor: string; reason: string }) => [event.actor, event.reason])).toEqual([
      ["bob", "resolved"],
      ["alice", "provider incident"],
    ]);
    expect(host.logger.events("control.kill_switch_engaged")).toHaveLength(1);
  });

  it("survives a restart when the settings facet is durable", async () => {
    const directory = join(tempDir(), "state");
    const first = await startHost(bundle, { state: await FileStateAdapter.open({ directory }) });
    await call(`${first.url}/admin/kill-switch`, { body: { engaged: true, reason: "maintenance" } });
    await first.shutdown();
    const second = await startHost(bundle, { state: await FileStateAdapter.open({ directory }) });
    expect((await send(second.url, "echo: hi")).status).toBe(503);
    expect((await call(`${second.url}/admin/kill-switch`)).body).toMatchObject({ engaged: true, reason: "maintenance" });
  });
});
