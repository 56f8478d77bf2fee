import { describe, expect, it } from "vitest";
import { sharedPostgres } from "./support/shared-postgres.js";
import { agentFolder } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const postgres = await sharedPostgres("automation-update-concurrent");

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", dynamicAutomations: { dynamic: true, approval: false } });
`;

/** Two hosts of one agent, each a runtime with its own connections to one PostgreSQL schema. */
async function twoHosts() {
  const schema = postgres.schema("al_automation_update");
  const dir = agentFolder({ "agent.ts": AGENT });
  const host = async () => {
    const state = await postgres.state(schema);
    const { runtime } = await startAgent(dir, [], { state });
    postgres.closeLater(() => runtime.close());
    return runtime;
  };
  return [await host(), await host()] as const;
}

const TRIALS = 20;

describe.skipIf(!postgres.available)("updating one automation from two hosts at once, on PostgreSQL", () => {
  it("keeps both changes when one host changes the message and the other disables it", async () => {
    const [a, b] = await twoHosts();
    for (let trial = 0; trial < TRIALS; trial += 1) {
      const name = `job-${trial}`;
      await a.automations.create({ name, schedule: "0 9 * * *", message: "before" });
      await Promise.all([a.automations.update(name, { message: `after ${trial}` }), b.automations.update(name, { enabled: false })]);
      expect(await a.automations.get(name), `trial ${trial}`).toMatchObject({ message: `after ${trial}`, enabled: false, nextRunAt: null });
    }
  });

  it("keeps both an update and an operator's pause made at once, and the pause rests the automation", async () => {
    const [a, b] = await twoHosts();
    for (let trial = 0; trial < TRIALS; trial += 1) {
      const name = `job-${trial}`;
      await a.automations.create({ name, schedule: { every: 60_000 }, message: "before" });
      await Promise.all([a.automations.update(name, { message: `after ${trial}`, conversationId: "c" }), b.automations.setPaused(name, true)]);
      expect(await b.automations.get(name), `trial ${trial}`).toMatchObject({ message: `after ${trial}`, conversationId: "c", paused: true, enabled: true, nextRunAt: null });
    }
  });

  it("keeps a new schedule from one host and a new message from the other, timed by the new schedule", async () => {
    const [a, b] = await twoHosts();
    for (let trial = 0; trial < TRIALS; trial += 1) {
      const name = `job-${trial}`;
      // Once a year before, hourly after: the row's next due time tells which schedule timed it.
      await a.automations.create({ name, schedule: "0 9 1 1 *", message: "before" });
      await Promise.all([a.automations.update(name, { schedule: { every: 3_600_000 } }), b.automations.update(name, { message: `after ${trial}` })]);
      const stored = await a.automations.get(name);
      expect(stored, `trial ${trial}`).toMatchObject({ message: `after ${trial}`, schedule: { kind: "every", everyMs: 3_600_000 } });
      expect(Date.parse(stored.nextRunAt!) - Date.now(), `trial ${trial}`).toBeLessThanOrEqual(3_600_000);
    }
  });

  it("never brings back an automation deleted while another host updated it", async () => {
    const [a, b] = await twoHosts();
    for (let trial = 0; trial < TRIALS; trial += 1) {
      const name = `job-${trial}`;
      await a.automations.create({ name, schedule: "0 9 * * *", message: "before" });
      await Promise.all([a.automations.update(name, { message: `after ${trial}` }).catch((error: { code?: string }) => error.code), b.automations.delete(name)]);
      expect((await b.automations.list()).map((automation) => automation.name), `trial ${trial}`).not.toContain(name);
    }
  });
});
