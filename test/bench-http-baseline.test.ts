import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: the bench is plain ESM, run with node, no types.
import { benchRuntime, buildBenchAgent, channelRun, startBenchHost } from "../bench/http-bench.js";

/**
 * The HTTP bench's target is the host's own work: its baseline (`runtime.run()` behind a bare
 * handler) must run the very run the host starts for the same message, and write the same rows.
 * A baseline that runs a smaller run, or writes rows the host does not, moves the host's figure.
 */
interface RunInput {
  message: string;
  metadata?: Record<string, unknown>;
  idempotencyKey?: string;
  channel?: { name: string; metadata?: Record<string, unknown> };
}

/** The input with its event id (random per message) replaced by a placeholder. */
function withoutEventId(input: RunInput): RunInput {
  const eventId = input.channel?.metadata?.eventId;
  expect(typeof eventId).toBe("string");
  const text = JSON.stringify(input).split(eventId as string).join("<event id>");
  return JSON.parse(text) as RunInput;
}

describe("HTTP bench baseline", () => {
  let agent: { bundle: unknown; remove(): void };
  beforeAll(async () => {
    agent = await buildBenchAgent();
  });
  afterAll(() => agent?.remove());

  it("runs the run the host starts for a message, and owes the same deliveries", async () => {
    const host = await startBenchHost(4, agent);
    const runtime = benchRuntime(4, agent);
    try {
      const response = await fetch(host.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ message: "bench 1" }) });
      expect(response.status).toBe(200);
      const hosted = (await response.json()) as { runId: string; status: string };
      expect(hosted.status).toBe("completed");
      const hostedRun = await host.handle.runtime.state.runs.getRun(hosted.runId);

      const direct = await runtime.run(channelRun("bench 1"));
      expect(direct.status).toBe("completed");
      const directRun = await runtime.state.runs.getRun(direct.runId);

      expect(withoutEventId(directRun.input as RunInput)).toEqual(withoutEventId(hostedRun.input as RunInput));
      // The idempotency key is kept beside the input: the host's scheme (`<channel>:<event id>`) finds each run again.
      const keyOf = (input: RunInput) => `message:${String(input.channel?.metadata?.eventId)}`;
      expect(await host.handle.runtime.submit({ message: "again", idempotencyKey: keyOf(hostedRun.input as RunInput) })).toEqual({ runId: hosted.runId, created: false });
      expect(await runtime.submit({ message: "again", idempotencyKey: keyOf(directRun.input as RunInput) })).toEqual({ runId: direct.runId, created: false });

      // The bench's raw route has no deliver(): the host's run owes no delivery row, so the baseline's must not.
      expect(await host.handle.runtime.state.runs.listDeliveries(hosted.runId)).toEqual([]);
      expect(await runtime.state.runs.listDeliveries(direct.runId)).toEqual([]);
    } finally {
      await runtime.close?.();
      await host.close();
    }
  });
});
