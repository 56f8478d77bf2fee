import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { ConversationMailbox } from "../src/host/mailbox.js";
import { fixtureBundle, fixtureProbe, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

type Host = Awaited<ReturnType<typeof startHost>>;

/** Two slow turns of `conversationId` stored queued, the earlier first, as the message route stores them; the probe reset. */
async function storedTurns(host: Host, conversationId: string): Promise<[{ runId: string }, { runId: string }]> {
  const turn = (message: string, key: string) =>
    host.runtime.submit({ message, conversationId, metadata: {}, idempotencyKey: `message:${key}`, channel: { name: "message", metadata: { eventId: key } } });
  const earlier = await turn("slow: earlier", "turn-1");
  const later = await turn("slow: later", "turn-2");
  Object.assign(fixtureProbe(), { active: 0, maxActive: 0, order: [] });
  return [earlier, later];
}

/** A mailbox of its own over the host's runtime, stopped with the test. */
function mailboxOf(host: Host): ConversationMailbox {
  const mailbox = new ConversationMailbox({ runtime: host.runtime, maxConcurrentRuns: 4, maxQueuedRuns: 10, logger: host.logger });
  onTestFinished(() => mailbox.stop());
  return mailbox;
}

/** Until `runId` has completed. */
async function completed(host: Host, runId: string): Promise<void> {
  await waitFor(async () => ((await host.runtime.state.runs.getRun(runId))?.status === "completed" ? true : undefined), 10_000, `run ${runId} to complete`);
}

describe("the mailbox and the store's order of a conversation's turns", () => {
  it("lets an earlier turn that reached it second go first, instead of holding the conversation for the later one", async () => {
    // No sweep during the test: only this mailbox starts the turns.
    const host = await startHost(bundle, { recoveryIntervalMs: 2_147_483_647 });
    // Stored in this order, as two turns arriving together may be, then handed to the mailbox the other way round.
    const [earlier, later] = await storedTurns(host, "c-order");
    const mailbox = mailboxOf(host);
    mailbox.enqueue(later.runId, "c-order");
    mailbox.enqueue(earlier.runId, "c-order");
    await completed(host, later.runId);
    expect(fixtureProbe().maxActive).toBe(1);
    expect(fixtureProbe().order).toEqual([`start:${earlier.runId}`, `end:${earlier.runId}`, `start:${later.runId}`, `end:${later.runId}`]);
  });

  it("keeps a later turn waiting while an earlier one of its conversation runs elsewhere, and starts it once that one ends", async () => {
    const host = await startHost(bundle, { recoveryIntervalMs: 2_147_483_647 });
    const [earlier, later] = await storedTurns(host, "c-elsewhere");
    // The earlier turn runs outside this mailbox (as on another replica), the later one is handed to it meanwhile.
    const elsewhere = host.runtime.start(earlier.runId);
    await waitFor(async () => ((await host.runtime.state.runs.getRun(earlier.runId))?.status === "running" ? true : undefined));
    mailboxOf(host).enqueue(later.runId, "c-elsewhere");
    await elsewhere;
    await completed(host, later.runId);
    expect(fixtureProbe().maxActive).toBe(1);
    expect(fixtureProbe().order).toEqual([`start:${earlier.runId}`, `end:${earlier.runId}`, `start:${later.runId}`, `end:${later.runId}`]);
  });
});
