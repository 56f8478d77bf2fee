import { afterEach, describe, expect, it } from "vitest";
import { InMemoryStateAdapter, noopLogger } from "@assemblyline-agents/runtime";
import { finalDeliveryFailure, type ChannelModule } from "@assemblyline-agents/core";
import { DeliveryOutbox } from "../src/host/outbox.js";
import { captureLogger, countingClaimsState } from "./support/host.js";

/** A completed run of channel `raw` that owes it its reply, as the kernel writes it with run.completed. */
async function completedRun(state: InMemoryStateAdapter, id: string): Promise<void> {
  await state.createRun({ id, agentId: "agent", agentRevision: "rev-1", modelSpec: "scripted/test", input: { message: "hi", metadata: {}, channel: { name: "raw" } } });
  await state.appendEvents(id, [{ type: "run.completed", data: { text: "done" } }], {
    run: { status: "completed", output: { text: "done" } },
    delivery: { id: `dlv_${id}`, channel: "raw", payload: { runId: id, text: "done" } },
  });
}

const raw = { config: { transport: "http", route: "/raw" } } as unknown as ChannelModule;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let outbox: DeliveryOutbox | undefined;
afterEach(async () => {
  await outbox?.stop();
  outbox = undefined;
});

describe("the delivery outbox's claims", () => {
  it("a burst of completions shares claims (one per 25 ms, and one per full batch), and every delivery is completed", async () => {
    const { state, claims } = countingClaimsState();
    outbox = new DeliveryOutbox(state, "agent", { raw }, noopLogger(), { agentRevision: "rev-1" });
    outbox.start();
    await sleep(20);
    const before = claims();
    // 60 runs completing 2 ms apart, each kicking the outbox as the host's run.completed tap does: about 120 ms.
    const started = Date.now();
    for (let i = 0; i < 60; i += 1) {
      await completedRun(state, `run-${i}`);
      outbox.kick();
      await sleep(2);
    }
    const burstMs = Date.now() - started;
    for (let i = 0; i < 60; i += 1) {
      const deadline = Date.now() + 5_000;
      while ((await state.listDeliveries(`run-${i}`))[0]?.status !== "delivered") {
        if (Date.now() > deadline) throw new Error(`delivery of run-${i} was not completed`);
        await sleep(5);
      }
    }
    // One claim per 25 ms of the burst, one more per full batch of 8 (claimed again at once), one at
    // each end: 20 or so for this burst, where a claim per completion would be 60.
    expect(claims() - before).toBeLessThanOrEqual(Math.ceil(burstMs / 25) + Math.ceil(60 / 8) + 2);
  });

  it("a lone completion after a quiet spell is claimed at once, not after the poll interval", async () => {
    const { state } = countingClaimsState();
    outbox = new DeliveryOutbox(state, "agent", { raw }, noopLogger(), { pollIntervalMs: 60_000, agentRevision: "rev-1" });
    outbox.start();
    await sleep(50);
    await completedRun(state, "lone");
    const kicked = Date.now();
    outbox.kick();
    const deadline = kicked + 5_000;
    while ((await state.listDeliveries("lone"))[0]?.status !== "delivered") {
      if (Date.now() > deadline) throw new Error("the lone delivery waited for the 60 s poll");
      await sleep(2);
    }
    expect((await state.listDeliveries("lone"))[0]).toMatchObject({ status: "delivered", attempts: 1 });
  });
});

describe("what the outbox gives a channel's deliver()", () => {
  /** Wait until the delivery of `runId` is no longer pending, or an attempt at it (counted by its claim) recorded its outcome. */
  async function settled(state: InMemoryStateAdapter, runId: string) {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const delivery = (await state.listDeliveries(runId))[0]!;
      if (delivery.status !== "pending" || (delivery.attempts > 0 && delivery.lease === null)) return delivery;
      if (Date.now() > deadline) throw new Error(`delivery of ${runId} never settled`);
      await sleep(5);
    }
  }

  it("the delivery's id and attempt number, and fails it at once when the channel says retrying cannot help", async () => {
    const state = new InMemoryStateAdapter();
    const seen: Array<{ deliveryId: string; attempt: number }> = [];
    const gone = {
      config: { transport: "http", route: "/gone" },
      deliver: async (delivery: { deliveryId: string; attempt: number }) => {
        seen.push({ deliveryId: delivery.deliveryId, attempt: delivery.attempt });
        throw finalDeliveryFailure(new Error("the provider says this conversation is gone"));
      },
    } as unknown as ChannelModule;
    outbox = new DeliveryOutbox(state, "agent", { raw: gone }, noopLogger(), { baseDelayMs: 10 });
    outbox.start();
    await completedRun(state, "gone");
    outbox.kick();
    const delivery = await settled(state, "gone");
    await sleep(100);
    expect(delivery).toMatchObject({ status: "failed", attempts: 1, lastError: "the provider says this conversation is gone" });
    expect(seen).toEqual([{ deliveryId: "dlv_gone", attempt: 1 }]);
  });

  it("aborts its signal when the outbox stops waiting, so a late send can be stopped", async () => {
    const state = new InMemoryStateAdapter();
    let aborted: unknown;
    const stuck = {
      config: { transport: "http", route: "/stuck" },
      deliver: (delivery: { signal: AbortSignal }) =>
        new Promise<void>(() => {
          delivery.signal.addEventListener("abort", () => (aborted = delivery.signal.reason));
        }),
    } as unknown as ChannelModule;
    outbox = new DeliveryOutbox(state, "agent", { raw: stuck }, noopLogger(), { deliverTimeoutMs: 50, baseDelayMs: 60_000 });
    outbox.start();
    await completedRun(state, "stuck");
    outbox.kick();
    const delivery = await settled(state, "stuck");
    expect(delivery).toMatchObject({ status: "pending", attempts: 1, lastError: "deliver() did not settle within 50 ms" });
    expect(String(aborted)).toContain("deliver() did not settle within 50 ms");
  });
});

describe("the outbox's stop()", () => {
  it("returns only once every delivery of the batch is sent, even when recording another one's outcome failed", async () => {
    const state = new InMemoryStateAdapter();
    await completedRun(state, "fast");
    await completedRun(state, "slow");
    // A database blip: recording the fast delivery as completed fails once.
    const complete = state.completeDelivery.bind(state);
    let blipped = false;
    state.completeDelivery = async (id, owner) => {
      if (id === "dlv_fast" && !blipped) {
        blipped = true;
        throw new Error("connection lost");
      }
      return complete(id, owner);
    };
    let slowSent = false;
    const chat = {
      config: { transport: "http", route: "/raw" },
      deliver: async (delivery: { runId: string }) => {
        if (delivery.runId !== "slow") return;
        await sleep(300);
        slowSent = true;
      },
    } as unknown as ChannelModule;
    const logger = captureLogger();
    outbox = new DeliveryOutbox(state, "agent", { raw: chat }, logger, { pollIntervalMs: 60_000 });
    outbox.start();
    await sleep(100); // both claimed in one batch: fast's completion has failed, slow is still sending
    await outbox.stop();
    expect(slowSent).toBe(true);
    expect(logger.events("outbox.record_failed").map((entry) => [entry.fields.deliveryId, entry.fields.err])).toEqual([["dlv_fast", "Error: connection lost"]]);
    expect(logger.events("outbox.claim_failed")).toEqual([]);
    expect((await state.listDeliveries("slow"))[0]).toMatchObject({ status: "delivered" });
  });
});
