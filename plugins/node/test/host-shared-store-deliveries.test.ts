import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClaimOptions, DeliveryRecord, StateAdapter } from "@assemblyline-agents/core";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { DeliveryOutbox } from "../src/host/outbox.js";
import { FIXTURE_AGENT, call, captureLogger, captureServer, signedEvent, startHost, tempDir, waitFor } from "./support/host.js";

/**
 * Two agents whose hosts share one state store, each with a provider channel named "provider" that
 * delivers replies. Agent B's id starts with agent A's, without the "/" of a subagent.
 */
const AGENT_A = "host-agent";
const AGENT_B = "host-agent-eu";

let bundleA: RuntimeBundle;
let bundleB: RuntimeBundle;
beforeAll(async () => {
  [bundleA, bundleB] = await Promise.all([agentBundle(AGENT_A), agentBundle(AGENT_B)]);
});

/** The fixture agent under another id, whose provider channel signs each reply it sends with that id. */
async function agentBundle(id: string): Promise<RuntimeBundle> {
  const agentDir = join(tempDir("al-host-agent-"), "agent");
  cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
  rewrite(join(agentDir, "agent.ts"), 'id: "host-agent"', `id: ${JSON.stringify(id)}`);
  rewrite(join(agentDir, "channels/provider.ts"), 'headers: { "content-type": "application/json" }', `headers: { "content-type": "application/json", "x-delivered-by": ${JSON.stringify(id)} }`);
  const { artifactRoot } = await buildAgent(agentDir);
  return loadRuntimeBundle(artifactRoot);
}

function rewrite(file: string, from: string, to: string): void {
  const source = readFileSync(file, "utf8");
  if (!source.includes(from)) throw new Error(`the fixture's ${file} no longer contains ${from}; give this test another way to change it`);
  writeFileSync(file, source.replace(from, to));
}

const stores: Record<string, () => Promise<StateAdapter>> = {
  "in-memory state": async () => new InMemoryStateAdapter(),
  "file state": async () => FileStateAdapter.open({ directory: tempDir("al-shared-state-") }),
};

/** Every delivery claim made on `state`: when, with which filter, and what it leased. */
interface Claim {
  at: number;
  agentId: string | undefined;
  leased: string[];
}

/**
 * The shared store: hosts' shutdowns leave it open; when the test ends, every host started on it
 * stops (a shutdown already under way is the same one) and then it closes.
 */
async function sharedStore(open: () => Promise<StateAdapter>) {
  const state = await open();
  const close = state.close!.bind(state);
  state.close = async () => undefined;
  const claims: Claim[] = [];
  const claim = state.claimDeliveries.bind(state);
  state.claimDeliveries = async (options: ClaimOptions) => {
    const leased = await claim(options);
    claims.push({ at: Date.now(), agentId: options.agentId, leased: leased.map((delivery) => delivery.id) });
    return leased;
  };
  const hosts: Array<Awaited<ReturnType<typeof startHost>>> = [];
  onTestFinished(async () => {
    await Promise.allSettled(hosts.map((host) => host.shutdown({ timeoutMs: 2_000 })));
    await close();
  });
  const start = async (bundle: RuntimeBundle, options: Parameters<typeof startHost>[1] = {}) => {
    const host = await startHost(bundle, { state, ...options });
    hosts.push(host);
    return host;
  };
  return { state, claims, start };
}

/** The run's reply, once its end enqueued it. */
async function deliveryOf(state: StateAdapter, runId: string): Promise<DeliveryRecord | undefined> {
  return (await state.listDeliveries(runId))[0];
}

const DELIVERY_EVENTS = ["delivery.completed", "delivery.failed", "delivery.skipped", "state.claim_filter_ignored"];

describe.each(Object.entries(stores))("replies in a store shared with another agent (%s)", (_name, open) => {
  it("agent A's host never claims, sends or fails agent B's reply, though it has a channel of that name; B's host delivers it", async () => {
    // The provider is down for B's first attempt, then up.
    const provider = await captureServer(({ index }) => ({ status: index === 0 ? 503 : 200 }));
    process.env.FIXTURE_DELIVERY_URL = provider.url;
    onTestFinished(() => {
      delete process.env.FIXTURE_DELIVERY_URL;
    });
    const { state, claims, start } = await sharedStore(open);

    // B's host runs the turn and fails its first send; it stops before the retry is due (0.5 to 1 s later).
    const b = await start(bundleB, { outbox: { pollIntervalMs: 20, baseDelayMs: 1_000, maxDelayMs: 1_000 } });
    const event = signedEvent({ type: "message", id: "evt-shared", conversation: "conv-shared", text: "echo: for B" });
    const accepted = await call(`${b.url}/provider/events`, { raw: event.raw, headers: event.headers });
    expect(accepted.status).toBe(202);
    const runId = accepted.body.runId as string;
    await waitFor(async () => ((await deliveryOf(state, runId))?.attempts === 1 ? true : undefined), 10_000, "B's first attempt to fail");
    await b.shutdown({ timeoutMs: 2_000 });
    const stoppedAt = Date.now();
    const pending = (await deliveryOf(state, runId))!;
    expect(pending).toMatchObject({ status: "pending", attempts: 1, channel: "provider", lastError: "provider answered 503", lease: null });

    // A's host looks for replies every 20 ms, well past the time B's retry is due.
    const a = await start(bundleA, { outbox: { pollIntervalMs: 20 } });
    const dueAt = Date.parse(pending.availableAt);
    await waitFor(() => claims.filter((claim) => claim.at > dueAt + 100).length >= 5 || undefined, 10_000, "A's outbox to claim past the due time");
    const claimsOfA = claims.filter((claim) => claim.at > stoppedAt);
    expect(claimsOfA.filter((claim) => claim.leased.includes(pending.id)), "A's claims that leased B's reply").toEqual([]);
    expect(await deliveryOf(state, runId)).toMatchObject({ status: "pending", attempts: 1, lease: null });
    expect(claimsOfA.map((claim) => claim.agentId)).toEqual(claimsOfA.map(() => AGENT_A));
    expect(provider.requests).toHaveLength(1);
    expect(a.logger.entries.filter((entry) => DELIVERY_EVENTS.includes(entry.fields.event as string))).toEqual([]);

    // B's host back: it delivers the reply, through its own channel.
    const again = await start(bundleB, { outbox: { pollIntervalMs: 20 } });
    const delivered = await waitFor(async () => {
      const delivery = await deliveryOf(state, runId);
      return delivery?.status === "delivered" ? delivery : undefined;
    }, 10_000, "B's host to deliver the reply");
    expect(delivered.attempts).toBe(2);
    expect(provider.requests.map((request) => [request.status, request.headers["x-delivered-by"]])).toEqual([
      [503, AGENT_B],
      [200, AGENT_B],
    ]);
    expect(JSON.parse(provider.requests[1]!.body)).toMatchObject({ runId, text: "hello back", conversationId: "conv-shared" });
    expect(again.logger.events("delivery.completed")).toHaveLength(1);
    expect(a.logger.entries.filter((entry) => DELIVERY_EVENTS.includes(entry.fields.event as string))).toEqual([]);
  });
});

describe("the outbox on a store that ignores claimDeliveries' agentId (one built before it)", () => {
  it("neither sends nor fails another agent's reply it was handed, and says the store ignores the option", async () => {
    const state = new InMemoryStateAdapter();
    const claim = state.claimDeliveries.bind(state);
    state.claimDeliveries = ({ agentId: _ignored, ...options }: ClaimOptions) => claim(options);
    for (const [runId, agentId] of [["run-theirs", AGENT_B], ["run-mine", AGENT_A]] as const) {
      await state.createRun({ id: runId, agentId, agentRevision: "rev-1", modelSpec: "scripted/test", input: { message: "hi", metadata: {}, channel: { name: "provider" } } });
      await state.appendEvents(runId, [{ type: "run.completed", data: {} }], {
        run: { status: "completed" },
        delivery: { id: `dlv_${runId}`, channel: "provider", payload: { runId, text: "done" } },
      });
    }
    const sent: string[] = [];
    const provider = { config: { transport: "http", route: "/provider" }, deliver: async (delivery: { runId: string }) => void sent.push(delivery.runId) };
    const logger = captureLogger();
    const outbox = new DeliveryOutbox(state, AGENT_A, { provider } as never, logger, { pollIntervalMs: 20 });
    outbox.start();
    onTestFinished(() => outbox.stop());

    await waitFor(async () => ((await deliveryOf(state, "run-mine"))?.status === "delivered" ? true : undefined), 5_000, "A's own reply");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sent).toEqual(["run-mine"]);
    // Left as it was but for the lease the store gave (and the attempt its claim counted): that agent's host takes it when it runs out.
    expect(await deliveryOf(state, "run-theirs")).toMatchObject({ status: "pending", attempts: 1, lastError: null, lease: { owner: outbox.owner } });
    expect(logger.events("state.claim_filter_ignored").map((entry) => entry.fields)).toEqual([
      { event: "state.claim_filter_ignored", deliveryId: "dlv_run-theirs", runId: "run-theirs", agentId: AGENT_B },
    ]);
    expect(logger.events("delivery.failed")).toEqual([]);
  });
});
