import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AssemblyLineError } from "@assemblyline-agents/core";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, fixtureProbe, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});
beforeEach(() => {
  Object.assign(fixtureProbe(), { active: 0, maxActive: 0, order: [] });
});

describe("a conversation's turns after a failed start", () => {
  it("starts the turn whose start failed (the state store unreachable a moment) before the conversation's later turns", async () => {
    // Sweeps come often, as they would re-adopt a turn the mailbox had let go.
    const host = await startHost(bundle, { leaseTtlMs: 200, recoveryIntervalMs: 200 });
    const start = host.runtime.start.bind(host.runtime);
    let starts = 0;
    host.runtime.start = (runId: string) => {
      starts += 1;
      if (starts === 2) return Promise.reject(new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", "the state database could not be reached"));
      return start(runId);
    };
    const runIds: string[] = [];
    for (const turn of [1, 2, 3]) {
      const reply = await call(`${host.url}/message`, { body: { message: `slow: ${turn}`, conversationId: "c-failed-start" } });
      expect(reply.status).toBe(202);
      runIds.push(reply.body.runId);
    }
    await waitFor(async () => ((await host.runtime.state.runs.getRun(runIds[2]!))?.status === "completed" ? true : undefined), 15_000, "the last turn to complete");
    await waitFor(async () => ((await host.runtime.state.runs.getRun(runIds[1]!))?.status === "completed" ? true : undefined), 15_000, "the failed turn to complete");
    expect(starts).toBeGreaterThanOrEqual(4);
    // One at a time, in the order the turns were accepted.
    expect(fixtureProbe().maxActive).toBe(1);
    expect(fixtureProbe().order.filter((entry) => entry.startsWith("start:"))).toEqual(runIds.map((runId) => `start:${runId}`));
  });
});
