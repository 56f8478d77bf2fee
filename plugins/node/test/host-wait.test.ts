import { beforeAll, describe, expect, it } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
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
});
