import { beforeAll, describe, expect, it } from "vitest";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

describe("POST with ?wait=", () => {
  // The wait is far longer than the test may take: a request answered only when the
  // wait runs out (its run's rest missed) fails by the test's timeout.
  it("is answered when its run rests, with the run's reply, not when the wait runs out", { timeout: 60_000 }, async () => {
    const host = await startHost(bundle);
    for (const message of ["echo: one", "echo: two", "echo: three"]) {
      const reply = await call(`${host.url}/message?wait=120`, { body: { message, conversationId: "w" } });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ status: "completed", response: { text: "hello back" }, duplicate: false, conversationId: "w" });
      // The reply taken from run.completed is what the stored run says.
      const { runId, status, response } = reply.body;
      expect(await host.runtime.getRun(runId)).toEqual({ runId, status, response });
    }
    const again = await call(`${host.url}/message?wait=120`, { body: { message: "echo: four" }, headers: { "idempotency-key": "k-1" } });
    const duplicate = await call(`${host.url}/message?wait=120`, { body: { message: "echo: four" }, headers: { "idempotency-key": "k-1" } });
    expect(duplicate.body).toMatchObject({ runId: again.body.runId, status: "completed", response: { text: "hello back" }, duplicate: true });
  });

  it("stores a message with no conversation leased to this host and drives it at once; a conversation's still queue in the mailbox", { timeout: 60_000 }, async () => {
    const state = new LeaseCountingState();
    const host = await startHost(bundle, { state });
    const lone = await call(`${host.url}/message?wait=120`, { body: { message: "echo: alone" } });
    expect(lone.status).toBe(200);
    expect(lone.body).toMatchObject({ status: "completed", response: { text: "hello back" }, duplicate: false, conversationId: null });
    // Created with its lease: the drive took none of its own.
    expect(state.leasedAtCreation).toEqual([lone.body.runId]);
    expect(state.leasesTaken).toEqual([]);
    expect(await host.runtime.getRun(lone.body.runId)).toMatchObject({ status: "completed" });

    const queued = await call(`${host.url}/message?wait=120`, { body: { message: "echo: in order", conversationId: "c" } });
    expect(queued.body).toMatchObject({ status: "completed", conversationId: "c" });
    expect(state.leasedAtCreation).toEqual([lone.body.runId]);
    expect(state.leasesTaken).toEqual([queued.body.runId]);

    // Not waited for: answered 202 once stored, and the run still completes.
    const unwaited = await call(`${host.url}/message`, { body: { message: "echo: later" } });
    expect(unwaited.status).toBe(202);
    await expect.poll(async () => (await host.runtime.getRun(unwaited.body.runId)).status).toBe("completed");
  });

  // The run is driven by the request's own process, so its wait ends with the drive or the timeout, never an event.
  it("answers a run it drives that outlasts ?wait when the wait runs out, with the run as it stands", { timeout: 60_000 }, async () => {
    process.env.HOST_FIXTURE_STEP_MS = "3000";
    try {
      const host = await startHost(bundle);
      const sent = Date.now();
      const reply = await call(`${host.url}/message?wait=0.3`, { body: { message: "slow: past the wait" } });
      expect(Date.now() - sent).toBeLessThan(2_500);
      expect(reply.status).toBe(202);
      expect(reply.body).toMatchObject({ status: "running", duplicate: false, conversationId: null });
      await expect.poll(async () => (await host.runtime.getRun(reply.body.runId)).status, { timeout: 10_000 }).toBe("completed");
    } finally {
      process.env.HOST_FIXTURE_STEP_MS = "150";
    }
  });

  it("waits on a run whose drive failed until it rests, when another drive takes it over", { timeout: 60_000 }, async () => {
    const state = new OutageState("slow: flaky");
    const host = await startHost(bundle, { state });
    const waiting = call(`${host.url}/message?wait=60`, { body: { message: "slow: flaky" } });
    // The store refuses the run's writes until its drive has given up (the mailbox logs the failed drive).
    await expect.poll(() => host.logger.events("mailbox.start_failed").length, { timeout: 10_000 }).toBe(1);
    state.outageOf = undefined;
    expect((await host.runtime.getRun(state.failedRun!)).status).toBe("running");
    // Resumed as the recovery sweep would: the waiting request is answered by that drive's end.
    await host.runtime.resume(state.failedRun!, { recovered: true });
    const reply = await waiting;
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ runId: state.failedRun, status: "completed", response: { text: "slow done" } });
  });
});

/** Refuses every append to the run whose message is `outageOf` once its first tool has completed, until `outageOf` is cleared. */
class OutageState extends InMemoryStateAdapter {
  failedRun: string | undefined;
  constructor(public outageOf: string | undefined) {
    super();
  }
  override async appendEvents(...args: Parameters<InMemoryStateAdapter["appendEvents"]>) {
    const [runId, events] = args;
    if (this.outageOf !== undefined && (runId === this.failedRun || events.some((event) => event.type === "tool.completed"))) {
      if (runId === this.failedRun || (await super.getRun(runId))?.input.message === this.outageOf) {
        this.failedRun = runId;
        throw new Error("the store is unreachable");
      }
    }
    return super.appendEvents(...args);
  }
}

/** Which runs were created already leased, and which had a lease taken after. */
class LeaseCountingState extends InMemoryStateAdapter {
  leasedAtCreation: string[] = [];
  leasesTaken: string[] = [];
  override createRun(...args: Parameters<InMemoryStateAdapter["createRun"]>) {
    if (args[1]?.lease) this.leasedAtCreation.push(args[0].id);
    return super.createRun(...args);
  }
  override acquireRunLease(...args: Parameters<InMemoryStateAdapter["acquireRunLease"]>) {
    this.leasesTaken.push(args[0]);
    return super.acquireRunLease(...args);
  }
}
