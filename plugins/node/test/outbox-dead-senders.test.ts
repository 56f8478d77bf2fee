import { afterEach, describe, expect, it } from "vitest";
import { InMemoryStateAdapter, noopLogger } from "@assemblyline-agents/runtime";
import type { ChannelModule, DeliveryRecord } from "@assemblyline-agents/core";
import { DeliveryOutbox, OTHER_BUILD_GRACE_MS, type DeliveryOutboxOptions } from "../src/host/outbox.js";
import { captureLogger } from "./support/host.js";

/**
 * A sender that dies mid-attempt (out of memory, a deploy's SIGKILL) records no outcome: its claim
 * is what counts the attempt, so a reply that kills its host cannot crash-loop every replica forever.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function completedRun(state: InMemoryStateAdapter, id: string, channel = "chat", revision = "rev-1"): Promise<void> {
  await state.createRun({ id, agentId: "agent", agentRevision: revision, modelSpec: "scripted/test", input: { message: "hi", metadata: {}, channel: { name: channel } } });
  await state.appendEvents(id, [{ type: "run.completed", data: { text: "done" } }], {
    run: { status: "completed", output: { text: "done" } },
    delivery: { id: `dlv_${id}`, channel, payload: { runId: id, text: "done" } },
  });
}

/** `count` hosts in turn claim the delivery and die while sending it: their leases just run out. */
async function deadSenders(state: InMemoryStateAdapter, count: number): Promise<void> {
  for (let crash = 0; crash < count; crash += 1) {
    expect(await state.claimDeliveries({ owner: `dead-host-${crash}`, ttlMs: 1, limit: 8, agentId: "agent" })).toHaveLength(1);
    await sleep(5);
  }
}

function recording(attempts: number[]): ChannelModule {
  return { config: { transport: "http", route: "/chat" }, deliver: async (delivery) => void attempts.push(delivery.attempt) } as ChannelModule;
}

const outboxes: DeliveryOutbox[] = [];
function outboxOf(state: InMemoryStateAdapter, channels: Record<string, ChannelModule>, options: DeliveryOutboxOptions, logger = noopLogger()): DeliveryOutbox {
  const outbox = new DeliveryOutbox(state, "agent", channels, logger, { pollIntervalMs: 10, ...options });
  outboxes.push(outbox);
  outbox.start();
  return outbox;
}
afterEach(async () => {
  await Promise.all(outboxes.splice(0).map((outbox) => outbox.stop()));
});

/** A store built before failDelivery's countAttempt: it ignores the option, so every hand-back stays counted. */
function storeWithoutCountAttempt(): InMemoryStateAdapter {
  const state = new InMemoryStateAdapter();
  const fail = state.failDelivery.bind(state);
  state.failDelivery = (deliveryId, owner, error, retryAt) => fail(deliveryId, owner, error, retryAt);
  return state;
}

async function until(state: InMemoryStateAdapter, runId: string, done: (delivery: DeliveryRecord) => boolean): Promise<DeliveryRecord> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const delivery = (await state.listDeliveries(runId))[0]!;
    if (done(delivery)) return delivery;
    if (Date.now() > deadline) throw new Error(`the delivery of ${runId} never got there: ${JSON.stringify(delivery)}`);
    await sleep(5);
  }
}

describe("a delivery whose sender died mid-attempt", () => {
  it("counts that attempt: the resend is attempt 2, as ChannelDelivery.attempt says of the first retry", async () => {
    const state = new InMemoryStateAdapter();
    await completedRun(state, "r1");
    await deadSenders(state, 1);
    const attempts: number[] = [];
    outboxOf(state, { chat: recording(attempts) }, { maxAttempts: 3 });
    const delivery = await until(state, "r1", (d) => d.status !== "pending");
    expect({ attempts, stored: delivery.attempts, status: delivery.status }).toEqual({ attempts: [2], stored: 2, status: "delivered" });
  });

  it("is failed for good, without sending it again, once its senders died on every allowed attempt", async () => {
    const state = new InMemoryStateAdapter();
    await completedRun(state, "r1");
    await deadSenders(state, 3);
    const attempts: number[] = [];
    const logger = captureLogger();
    outboxOf(state, { chat: recording(attempts) }, { maxAttempts: 3 }, logger);
    const delivery = await until(state, "r1", (d) => d.status !== "pending");
    expect(attempts).toEqual([]);
    expect(delivery).toMatchObject({ status: "failed", attempts: 4, lease: null });
    expect(delivery.lastError).toMatch(/^failed for good after 3 attempts: the sender of the last one stopped without recording an outcome/);
    expect(logger.events("delivery.failed")).toEqual([
      expect.objectContaining({ level: "error", fields: expect.objectContaining({ deliveryId: "dlv_r1", attempt: 4, final: true, err: delivery.lastError }) }),
    ]);
    // Failed for good: no replica claims it again.
    expect(await state.claimDeliveries({ owner: "later", ttlMs: 1_000, agentId: "agent" })).toEqual([]);
  });

  it("still gets its one last try after hosts of another build handed it back past maxAttempts, on a store that keeps hand-backs counted", async () => {
    const state = storeWithoutCountAttempt();
    // The new build (rev-2) has channel chat; hosts of the old build hand its reply back, each time counted.
    await completedRun(state, "r1", "chat", "rev-2");
    const oldBuild = outboxOf(state, {}, { agentRevision: "rev-1", maxAttempts: 2, baseDelayMs: 0 });
    await until(state, "r1", (d) => d.attempts >= 4 && d.lease === null);
    await oldBuild.stop();
    const handedBack = (await state.listDeliveries("r1"))[0]!;
    expect(handedBack).toMatchObject({ status: "pending", lastError: "this build has no channel chat; left for a build that has it" });

    const attempts: number[] = [];
    outboxOf(state, { chat: recording(attempts) }, { agentRevision: "rev-2", maxAttempts: 2 });
    const delivery = await until(state, "r1", (d) => d.status !== "pending");
    expect(delivery).toMatchObject({ status: "delivered", attempts: handedBack.attempts + 1 });
    expect(attempts).toEqual([handedBack.attempts + 1]);
  });

  it("is failed without the claim that its last sender died once the grace period after hand-backs past maxAttempts is over, on a store that keeps them counted", async () => {
    const state = storeWithoutCountAttempt();
    await completedRun(state, "r1", "chat", "rev-2");
    const oldBuild = outboxOf(state, {}, { agentRevision: "rev-1", maxAttempts: 2, baseDelayMs: 0 });
    await until(state, "r1", (d) => d.attempts >= 4 && d.lease === null);
    await oldBuild.stop();
    // An hour later: a sender of the build that has chat may have died on it since, which records nothing.
    const claim = state.claimDeliveries.bind(state);
    state.claimDeliveries = async (options) =>
      (await claim(options)).map((delivery) => ({ ...delivery, createdAt: new Date(Date.now() - OTHER_BUILD_GRACE_MS - 1_000).toISOString() }));
    const attempts: number[] = [];
    outboxOf(state, { chat: recording(attempts) }, { agentRevision: "rev-2", maxAttempts: 2 });
    const delivery = await until(state, "r1", (d) => d.status !== "pending");
    expect(delivery.status).toBe("failed");
    expect(delivery.lastError).toMatch(/the last one recorded was left for another build \(this build has no channel chat; left for a build that has it\)/);
    expect(attempts).toEqual([]);
  });
});
