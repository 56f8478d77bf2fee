import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, fixtureProbe, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});
beforeEach(() => {
  Object.assign(fixtureProbe(), { active: 0, maxActive: 0, order: [] });
});

async function allCompleted(url: string, runIds: string[]): Promise<void> {
  await waitFor(async () => {
    const statuses = await Promise.all(runIds.map(async (runId) => (await call(`${url}/runs/${runId}`)).body.run.status));
    return statuses.every((status) => status === "completed") || undefined;
  }, 20_000, `${runIds.length} runs to complete`);
}

describe("admission", () => {
  it("answers 429 with Retry-After beyond maxConcurrentRuns + maxQueuedRuns and completes every accepted run", async () => {
    const maxConcurrentRuns = 4;
    const host = await startHost(bundle, { maxConcurrentRuns, maxQueuedRuns: 4 });
    const replies = await Promise.all(Array.from({ length: 10 * maxConcurrentRuns }, (_, i) => call(`${host.url}/message`, { body: { message: `slow: ${i}` } })));
    const accepted = replies.filter((reply) => reply.status === 202);
    const refused = replies.filter((reply) => reply.status === 429);
    expect(accepted.length + refused.length).toBe(replies.length);
    expect(accepted.length).toBeGreaterThanOrEqual(8);
    expect(refused.length).toBeGreaterThan(0);
    for (const reply of refused) {
      expect(Number(reply.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(reply.body.error.code).toBe("AL_ERR_RUN_CAPACITY");
    }
    await allCompleted(host.url, accepted.map((reply) => reply.body.runId));
    expect(fixtureProbe().maxActive).toBe(maxConcurrentRuns);
    expect((await host.runtime.state.runs.listRuns({ limit: 200 })).runs).toHaveLength(accepted.length);
  });

  it("runs one conversation's events one at a time, in the order they were accepted", async () => {
    const host = await startHost(bundle, { maxConcurrentRuns: 8 });
    const runIds: string[] = [];
    for (let i = 0; i < 3; i += 1) runIds.push((await call(`${host.url}/message`, { body: { message: `slow: ${i}`, conversationId: "same" } })).body.runId);
    const other = (await call(`${host.url}/message`, { body: { message: "slow: other", conversationId: "other" } })).body.runId;
    await allCompleted(host.url, [...runIds, other]);
    const order = fixtureProbe().order.filter((entry) => runIds.some((runId) => entry.endsWith(runId)));
    expect(order).toEqual(runIds.flatMap((runId) => [`start:${runId}`, `end:${runId}`]));
    // Another conversation was not held back behind them.
    expect(fixtureProbe().order.indexOf(`start:${other}`)).toBeLessThan(fixtureProbe().order.indexOf(`end:${runIds[0]}`));
  });

  it("lets resumes bypass the limit", async () => {
    const host = await startHost(bundle, { maxConcurrentRuns: 1, maxQueuedRuns: 0 });
    const paused = await call(`${host.url}/message?wait=10`, { body: { message: "approve: it" } });
    expect(paused.body.status).toBe("waiting_approval");
    const busy = await call(`${host.url}/message`, { body: { message: "slow: holds the only slot" } });
    expect(busy.status).toBe(202);
    expect((await call(`${host.url}/message`, { body: { message: "echo: no room" } })).status).toBe(429);
    const approved = await call(`${host.url}/runs/${paused.body.runId}/approve`, { body: {} });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ status: "completed", response: { text: "published" } });
    expect((await call(`${host.url}/runs/${busy.body.runId}`)).body.run.status).not.toBe("queued");
  });

  it("counts a run started beside the host (runtime.run()) in the refusal it answers", async () => {
    const host = await startHost(bundle, { maxConcurrentRuns: 1, maxQueuedRuns: 0 });
    const direct = host.runtime.run({ message: "slow: started in the process, not through a channel" });
    const refused = await call(`${host.url}/message`, { body: { message: "echo: no room" } });
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toBe("1 runs are executing and 0 are waiting, the configured maximum");
    expect((await direct).status).toBe("completed");
  });

  it("reads the limits from ASSEMBLY_LINE_MAX_CONCURRENT_RUNS and ASSEMBLY_LINE_MAX_QUEUED_RUNS", async () => {
    const host = await startHost(bundle, { env: { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_MAX_CONCURRENT_RUNS: "1", ASSEMBLY_LINE_MAX_QUEUED_RUNS: "1" } });
    const replies = await Promise.all(Array.from({ length: 4 }, (_, i) => call(`${host.url}/message`, { body: { message: `slow: ${i}` } })));
    expect(replies.map((reply) => reply.status).sort()).toEqual([202, 202, 429, 429]);
  });
});
