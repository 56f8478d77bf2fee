import { beforeAll, describe, expect, it } from "vitest";
import { AssemblyLineError } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

/** A store that goes down on demand, failing the way the PostgreSQL adapter does: with the database's address in the message. */
class FlakyState extends InMemoryStateAdapter {
  down = false;
  override async getRun(runId: string) {
    if (this.down) throw new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", "getRun: could not reach PostgreSQL at 10.1.2.3:5432 (connect ECONNREFUSED 10.1.2.3:5432)");
    return super.getRun(runId);
  }
}

describe("a state store outage", () => {
  it("turns /readyz to 503 with Retry-After, and answers 503 with Retry-After and no address while it lasts", async () => {
    const state = new FlakyState();
    const host = await startHost(bundle, { state });
    try {
      expect((await call(`${host.url}/readyz`)).status).toBe(200);
      state.down = true;
      const ready = await call(`${host.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      const refused = await call(`${host.url}/runs/run_x`);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      expect(refused.body.error.code).toBe("AL_ERR_STATE_UNAVAILABLE");
      expect(JSON.stringify(refused.body)).not.toMatch(/10\.1\.2\.3|5432|ECONNREFUSED|PostgreSQL/);
      state.down = false;
      expect((await call(`${host.url}/readyz`)).status).toBe(200);
    } finally {
      await host.shutdown({ timeoutMs: 2_000 });
    }
  });
});
