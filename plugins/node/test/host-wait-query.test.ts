import { beforeAll, describe, expect, it } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

describe("the ?wait= query parameter", () => {
  it("refuses anything but a decimal number of seconds with a 400 naming the parameter, and starts no run", async () => {
    const host = await startHost(bundle);
    for (const wait of ["abc", "0x10", "0b11", "0o7", "%20%20", "%2010", "1e1", "-1", "%2B5", "Infinity", "1.", "1,5"]) {
      const reply = await call(`${host.url}/message?wait=${wait}`, { body: { message: "echo: hi" } });
      expect(reply.status, `?wait=${wait}`).toBe(400);
      expect(reply.body.error.code).toBe("AL_ERR_HTTP_BODY_INVALID");
      expect(reply.body.error.message).toContain(`wait=${JSON.stringify(decodeURIComponent(wait))}`);
    }
    expect((await host.runtime.state.runs.listRuns({ limit: 10 })).runs).toEqual([]);
    // Decisions read it the same way: refused before the decision is looked at (409 for this run otherwise).
    const done = await call(`${host.url}/message?wait=30`, { body: { message: "echo: hi" } });
    const decision = await call(`${host.url}/runs/${done.body.runId}/approve?wait=0x10`, { body: {} });
    expect(decision.status).toBe(400);
    expect(decision.body.error.message).toContain('wait="0x10"');
  });

  it("takes whole and fractional seconds, and an empty value as no wait", async () => {
    const host = await startHost(bundle);
    expect((await call(`${host.url}/message?wait=`, { body: { message: "echo: hi" } })).status).toBe(202);
    expect((await call(`${host.url}/message?wait=0`, { body: { message: "echo: hi" } })).status).toBe(202);
    const waited = await call(`${host.url}/message?wait=30.5`, { body: { message: "echo: hi" } });
    expect(waited.status).toBe(200);
    expect(waited.body.status).toBe("completed");
    const capped = await call(`${host.url}/message?wait=100000`, { body: { message: "echo: hi" } });
    expect(capped.body.status).toBe("completed");
  });

  it("cuts a long refused value short in the error", async () => {
    const host = await startHost(bundle);
    const reply = await call(`${host.url}/message?wait=${"9x".repeat(500)}`, { body: { message: "echo: hi" } });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message.length).toBeLessThan(200);
  });
});
