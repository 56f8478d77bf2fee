import { afterEach, describe, expect, it, vi } from "vitest";
import { InMemoryStateAdapter, noopLogger } from "@assemblyline-agents/runtime";
import { finalDeliveryFailure, retryDeliveryAfter, type ChannelModule, type RuntimeLogger } from "@assemblyline-agents/core";
import { DeliveryOutbox, type OutboxOptions } from "../src/host/outbox.js";

/** A completed run of channel `rl` that owes it its reply, as the kernel writes it with run.completed. */
async function completedRun(state: InMemoryStateAdapter, id: string): Promise<void> {
  await state.createRun({ id, agentId: "agent", agentRevision: "rev-1", modelSpec: "scripted/test", input: { message: "hi", metadata: {}, channel: { name: "rl" } } });
  await state.appendEvents(id, [{ type: "run.completed", data: { text: "done" } }], {
    run: { status: "completed", output: { text: "done" } },
    delivery: { id: `dlv_${id}`, channel: "rl", payload: { runId: id, text: "done" } },
  });
}

/**
 * A channel whose provider refuses the first `refusals` attempts with `error()`, then takes the reply;
 * `calls` is when each attempt started (Date.now()), `failedAt` when the last refusal was thrown.
 */
function limitedChannel(refusals: number, error: () => Error) {
  const calls: number[] = [];
  let failedAt = 0;
  const module = {
    config: { transport: "http", route: "/rl" },
    deliver: async () => {
      calls.push(Date.now());
      if (calls.length > refusals) return;
      failedAt = Date.now();
      throw error();
    },
  } as unknown as ChannelModule;
  return { module, calls, failedAt: () => failedAt };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(probe: () => Promise<boolean> | boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const outboxes: DeliveryOutbox[] = [];
function startOutbox(state: InMemoryStateAdapter, module: ChannelModule, options: OutboxOptions, logger: RuntimeLogger = noopLogger()): DeliveryOutbox {
  const outbox = new DeliveryOutbox(state, "agent", { rl: module }, logger, { pollIntervalMs: 10, ...options });
  outboxes.push(outbox);
  outbox.start();
  return outbox;
}

afterEach(async () => {
  await Promise.all(outboxes.splice(0).map((outbox) => outbox.stop()));
  vi.useRealTimers();
});

const delivered = async (state: InMemoryStateAdapter, runId: string) => (await state.listDeliveries(runId))[0]?.status === "delivered";

describe("a deliver() that says when to try again (retryDeliveryAfter)", () => {
  it("is not called again before the 300 ms it asked for, and is after", async () => {
    const state = new InMemoryStateAdapter();
    const channel = limitedChannel(1, () => retryDeliveryAfter(new Error("429: retry after 0.3 s"), 300));
    // The outbox's own backoff alone would retry within 10 ms.
    startOutbox(state, channel.module, { baseDelayMs: 10 });
    await completedRun(state, "asked");
    await waitFor(() => delivered(state, "asked"), "the retried delivery");
    expect(channel.calls).toHaveLength(2);
    expect(channel.calls[1]! - channel.failedAt()).toBeGreaterThanOrEqual(300);
    expect((await state.listDeliveries("asked"))[0]).toMatchObject({ status: "delivered", attempts: 2 });
  });

  it("waits its own backoff when the channel asks for less", async () => {
    const state = new InMemoryStateAdapter();
    const channel = limitedChannel(1, () => retryDeliveryAfter(new Error("retry at once"), 0));
    // Backoff after the first attempt: 150 to 300 ms (full jitter on the upper half of 300).
    startOutbox(state, channel.module, { baseDelayMs: 300 });
    await completedRun(state, "eager");
    await waitFor(() => delivered(state, "eager"), "the retried delivery");
    expect(channel.calls[1]! - channel.failedAt()).toBeGreaterThanOrEqual(150);
  });

  it("waits no longer than maxDelayMs, however long the channel asks for", async () => {
    const state = new InMemoryStateAdapter();
    const channel = limitedChannel(1, () => retryDeliveryAfter(new Error("429: retry after an hour"), 3_600_000));
    startOutbox(state, channel.module, { baseDelayMs: 10, maxDelayMs: 200 });
    await completedRun(state, "capped");
    await waitFor(() => delivered(state, "capped"), "the retry after maxDelayMs", 3_000);
    expect(channel.calls[1]! - channel.failedAt()).toBeGreaterThanOrEqual(100);
  });

  it("counts each wait as an attempt: a provider that keeps asking ends in a failed delivery after maxAttempts", async () => {
    const state = new InMemoryStateAdapter();
    const channel = limitedChannel(Infinity, () => retryDeliveryAfter(new Error("429: retry after 20 ms"), 20));
    startOutbox(state, channel.module, { baseDelayMs: 1, maxAttempts: 3 });
    await completedRun(state, "exhausted");
    await waitFor(async () => (await state.listDeliveries("exhausted"))[0]?.status === "failed", "the failed delivery");
    expect((await state.listDeliveries("exhausted"))[0]).toMatchObject({ status: "failed", attempts: 3, lastError: "429: retry after 20 ms" });
    expect(channel.calls).toHaveLength(3);
  });

  it("fails at once an error that is final, even one that also names a wait", async () => {
    const state = new InMemoryStateAdapter();
    const channel = limitedChannel(Infinity, () => finalDeliveryFailure(retryDeliveryAfter(new Error("token expired"), 20)));
    startOutbox(state, channel.module, { baseDelayMs: 1 });
    await completedRun(state, "final");
    await waitFor(async () => (await state.listDeliveries("final"))[0]?.status === "failed", "the failed delivery");
    await sleep(50);
    expect(channel.calls).toHaveLength(1);
  });

  it("falls back to backoff for a wait that is not a number of 0 or more (a garbled Retry-After)", async () => {
    const state = new InMemoryStateAdapter();
    const channel = limitedChannel(1, () => retryDeliveryAfter(new Error("429: retry after ?"), Number.NaN));
    startOutbox(state, channel.module, { baseDelayMs: 10 });
    await completedRun(state, "garbled");
    await waitFor(() => delivered(state, "garbled"), "the retried delivery", 2_000);
  });

  it("retries a wait longer than the lease once, in one of two replicas, when it is over and not before", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const state = new InMemoryStateAdapter();
    const channel = limitedChannel(1, () => retryDeliveryAfter(new Error("429: retry after 60 s"), 60_000));
    // A lease is deliverTimeoutMs * 2 + 10 s: 10.1 s here, far shorter than the wait.
    const options = { baseDelayMs: 10, deliverTimeoutMs: 50, pollIntervalMs: 500 };
    startOutbox(state, channel.module, options);
    startOutbox(state, channel.module, options);
    await completedRun(state, "replicas");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(channel.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(58_500);
    expect(channel.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(channel.calls).toHaveLength(2);
    expect(channel.calls[1]! - channel.failedAt()).toBeGreaterThanOrEqual(60_000);
    expect((await state.listDeliveries("replicas"))[0]).toMatchObject({ status: "delivered", attempts: 2 });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(channel.calls).toHaveLength(2);
  });
});
