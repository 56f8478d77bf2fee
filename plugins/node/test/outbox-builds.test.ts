import { afterEach, describe, expect, it } from "vitest";
import { InMemoryStateAdapter, noopLogger } from "@assemblyline-agents/runtime";
import type { ChannelModule, DeliveryRecord } from "@assemblyline-agents/core";
import { DeliveryOutbox, OTHER_BUILD_GRACE_MS, type DeliveryOutboxOptions } from "../src/host/outbox.js";
import { captureLogger } from "./support/host.js";

/**
 * Builds of one agent share the store during a rolling deploy: a reply names a channel, and only a build
 * that has that channel (with a deliver()) can send it.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A completed run taken in by build `revision` through `channel`, owing its reply, as the kernel writes it. */
async function completedRun(state: InMemoryStateAdapter, id: string, channel: string, revision: string): Promise<void> {
  await state.createRun({ id, agentId: "agent", agentRevision: revision, modelSpec: "scripted/test", input: { message: "hi", metadata: {}, channel: { name: channel } } });
  await state.appendEvents(id, [{ type: "run.completed", data: { text: "done" } }], {
    run: { status: "completed", output: { text: "done" } },
    delivery: { id: `dlv_${id}`, channel, payload: { runId: id, text: "done" } },
  });
}

/** A channel that reads its reply from the run (a raw route): no deliver(). */
const readFromRun = (route: string) => ({ config: { transport: "http", route } }) as ChannelModule;
function sending(route: string, sent: string[]): ChannelModule {
  return { config: { transport: "http", route }, deliver: async (delivery) => void sent.push(delivery.text) } as ChannelModule;
}

const outboxes: DeliveryOutbox[] = [];
function host(state: InMemoryStateAdapter, channels: Record<string, ChannelModule>, options: DeliveryOutboxOptions, logger = noopLogger()): DeliveryOutbox {
  const outbox = new DeliveryOutbox(state, "agent", channels, logger, { pollIntervalMs: 10, baseDelayMs: 20, ...options });
  outboxes.push(outbox);
  return outbox;
}
afterEach(async () => {
  await Promise.all(outboxes.splice(0).map((outbox) => outbox.stop()));
});

/** Run `outbox` until the delivery of `runId` was claimed once (or settled), then stop it, once that attempt settled. */
async function oneRound(outbox: DeliveryOutbox, state: InMemoryStateAdapter, runId: string): Promise<DeliveryRecord> {
  outbox.start();
  const deadline = Date.now() + 5_000;
  for (;;) {
    const delivery = (await state.listDeliveries(runId))[0]!;
    // A claim counts the attempt (stop() waits for it to be recorded); a hand-back gives it back, and leaves its error.
    if (delivery.attempts > 0 || delivery.lastError !== null || delivery.status !== "pending") {
      await outbox.stop();
      return (await state.listDeliveries(runId))[0]!;
    }
    if (Date.now() > deadline) throw new Error(`the delivery of ${runId} was never attempted`);
    await sleep(5);
  }
}

/** Hosts of rev-1, which lacks the reply's channel, hand the delivery of `runId` back at least `count` times (maxAttempts 3). */
async function handBacks(state: InMemoryStateAdapter, runId: string, count: number): Promise<void> {
  const logger = captureLogger();
  const oldBuild = host(state, { message: readFromRun("/message") }, { agentRevision: "rev-1", maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2, pollIntervalMs: 5 }, logger);
  oldBuild.start();
  for (let i = 0; i < 400 && logger.events("delivery.other_build").length < count; i++) await sleep(5);
  await oldBuild.stop();
  expect(logger.events("delivery.other_build").length).toBeGreaterThanOrEqual(count);
  expect(logger.events("delivery.failed")).toEqual([]);
}

async function delivered(state: InMemoryStateAdapter, runId: string): Promise<DeliveryRecord> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const delivery = (await state.listDeliveries(runId))[0]!;
    if (delivery.status !== "pending") return delivery;
    if (Date.now() > deadline) throw new Error(`the delivery of ${runId} was never settled`);
    await sleep(5);
  }
}

describe("a reply for a channel only another build has", () => {
  it("is left by a host of the old build, with a retry time, and sent by the new build's host", async () => {
    const state = new InMemoryStateAdapter();
    // The new build (rev-2) added channel sms and took a message in through it.
    await completedRun(state, "r1", "sms", "rev-2");
    const logger = captureLogger();
    const left = await oneRound(host(state, { message: readFromRun("/message") }, { agentRevision: "rev-1" }, logger), state, "r1");
    // Nothing was sent, so no attempt is used up.
    expect(left).toMatchObject({ status: "pending", attempts: 0, lastError: "this build has no channel sms; left for a build that has it" });
    expect(Date.parse(left.availableAt)).toBeGreaterThan(Date.now() - 1_000);
    expect(logger.events("delivery.other_build")).toHaveLength(1);
    expect(logger.events("delivery.failed")).toEqual([]);

    const sent: string[] = [];
    host(state, { sms: sending("/sms", sent), message: readFromRun("/message") }, { agentRevision: "rev-2" }).start();
    expect(await delivered(state, "r1")).toMatchObject({ status: "delivered", lastError: null });
    expect(sent).toEqual(["done"]);
  });

  it("is not marked delivered by a build whose channel of that name has no deliver(): the build that has one sends it", async () => {
    const state = new InMemoryStateAdapter();
    // In rev-2 the chat channel gained deliver(); rev-1's chat read its replies from the run.
    await completedRun(state, "r1", "chat", "rev-2");
    const left = await oneRound(host(state, { chat: readFromRun("/chat") }, { agentRevision: "rev-1" }), state, "r1");
    expect(left).toMatchObject({ status: "pending", lastError: "channel chat has no deliver() in this build; left for a build that has it" });

    const sent: string[] = [];
    host(state, { chat: sending("/chat", sent) }, { agentRevision: "rev-2" }).start();
    expect(await delivered(state, "r1")).toMatchObject({ status: "delivered", lastError: null });
    expect(sent).toEqual(["done"]);
  });

  it("is handed back for longer the older it is, so hosts that cannot send it do not claim it again every second", async () => {
    const state = new InMemoryStateAdapter();
    await completedRun(state, "r1", "sms", "rev-2");
    // Twenty minutes old: no build with sms has come for it yet.
    const claim = state.claimDeliveries.bind(state);
    state.claimDeliveries = async (options) => (await claim(options)).map((delivery) => ({ ...delivery, createdAt: new Date(Date.now() - 20 * 60_000).toISOString() }));
    const before = Date.now();
    const left = await oneRound(host(state, { message: readFromRun("/message") }, { agentRevision: "rev-1", maxDelayMs: 300_000 }), state, "r1");
    expect(left).toMatchObject({ status: "pending", attempts: 0 });
    // A quarter of its age (five minutes, maxDelayMs here), jittered down to half of that at least.
    expect(Date.parse(left.availableAt) - before).toBeGreaterThanOrEqual(150_000);
    expect(Date.parse(left.availableAt) - before).toBeLessThanOrEqual(300_000 + (Date.now() - before));
  });

  it("is failed for good once no build has sent it within the grace period", async () => {
    const state = new InMemoryStateAdapter();
    await completedRun(state, "r1", "sms", "rev-2");
    // The delivery is older than the grace period: no host of a build with sms came for it (e.g. rev-2 was rolled back).
    const claim = state.claimDeliveries.bind(state);
    state.claimDeliveries = async (options) =>
      (await claim(options)).map((delivery) => ({ ...delivery, createdAt: new Date(Date.now() - OTHER_BUILD_GRACE_MS - 1_000).toISOString() }));
    const logger = captureLogger();
    const failed = await oneRound(host(state, { message: readFromRun("/message") }, { agentRevision: "rev-1" }, logger), state, "r1");
    expect(failed).toMatchObject({ status: "failed", lastError: "this agent has no channel sms" });
    expect(logger.events("delivery.failed").map((entry) => entry.fields.final)).toEqual([true]);
  });

  it("keeps every attempt for the build that sends it, however many times hosts of another build handed it back", async () => {
    const state = new InMemoryStateAdapter();
    await completedRun(state, "r1", "sms", "rev-2");
    // A long rolling deploy: hosts of rev-1 (no sms) hand it back more times than maxAttempts allows.
    await handBacks(state, "r1", 5);
    expect((await state.listDeliveries("r1"))[0]).toMatchObject({ status: "pending", attempts: 0 });

    // rev-2's provider is down for two attempts: the third, the last maxAttempts allows, sends it.
    const attempts: number[] = [];
    const flaky = {
      config: { transport: "http", route: "/sms" },
      deliver: async (delivery) => {
        attempts.push(delivery.attempt);
        if (attempts.length < 3) throw new Error("HTTP 503");
      },
    } as ChannelModule;
    host(state, { sms: flaky }, { agentRevision: "rev-2", maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 }).start();
    expect(await delivered(state, "r1")).toMatchObject({ status: "delivered", attempts: 3, lastError: null });
    expect(attempts).toEqual([1, 2, 3]);
  });

  it("is failed for lack of its channel, not for a sender that died, when it was handed back past maxAttempts and the grace period ended", async () => {
    const state = new InMemoryStateAdapter();
    await completedRun(state, "r1", "sms", "rev-2");
    await handBacks(state, "r1", 5);
    // An hour later, no host of a build with sms came for it.
    const claim = state.claimDeliveries.bind(state);
    state.claimDeliveries = async (options) =>
      (await claim(options)).map((delivery) => ({ ...delivery, createdAt: new Date(Date.now() - OTHER_BUILD_GRACE_MS - 1_000).toISOString() }));
    host(state, { message: readFromRun("/message") }, { agentRevision: "rev-1", maxAttempts: 3 }).start();
    expect(await delivered(state, "r1")).toMatchObject({ status: "failed", lastError: "this agent has no channel sms" });
  });
});

describe("a reply for a channel the run's own build lacks or reads from the run", () => {
  it("is failed for good at once when this build, which took the run in, has no such channel", async () => {
    const state = new InMemoryStateAdapter();
    await completedRun(state, "r1", "sms", "rev-1");
    const failed = await oneRound(host(state, { message: readFromRun("/message") }, { agentRevision: "rev-1" }), state, "r1");
    expect(failed).toMatchObject({ status: "failed", attempts: 1, lastError: "this agent has no channel sms" });
  });

  it("is completed without sending when this build's channel reads its reply from the run", async () => {
    const state = new InMemoryStateAdapter();
    await completedRun(state, "r1", "raw", "rev-1");
    const done = await oneRound(host(state, { raw: readFromRun("/raw") }, { agentRevision: "rev-1" }), state, "r1");
    expect(done).toMatchObject({ status: "delivered", attempts: 1, lastError: null });
  });
});
