import { describe, expect, it } from "vitest";
import { isAssemblyLineError, noopLogger, type ScheduleRecord } from "@assemblyline-agents/core";
import { Automations, NEVER, buildAgent, nextDueAfter, normalizeSchedule } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource, writeFiles } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";
import { automationsAt } from "./support/automations-at.js";
import { outputOf } from "./support/probe-harness.js";

const automation = (schedule: string, extra = "") => `import { defineAutomation } from "@assemblyline-agents/core";
export default defineAutomation({ schedule: ${schedule}, message: "send the report"${extra} });
`;

async function expectCode(work: Promise<unknown>, code: string, text?: RegExp): Promise<void> {
  const error = await work.then(() => undefined, (caught: unknown) => caught);
  expect(isAssemblyLineError(error) ? error.code : error).toBe(code);
  if (text) expect((error as Error).message).toMatch(text);
}

describe("automations/ in the manifest", () => {
  it("compiles each file into the manifest and counts it in the revision", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "automations/daily_report.ts": automation(`{ cron: "0 9 * * 1-5", timezone: "Europe/Paris" }`, `, conversationId: "ops"`) });
    const { manifest } = await buildAgent(dir);
    expect(manifest.automations).toEqual([
      {
        name: "daily_report",
        source: { file: "automations/daily_report.ts", hash: expect.any(String) },
        schedule: { kind: "cron", expression: "0 9 * * 1-5", timezone: "Europe/Paris" },
        message: "send the report",
        conversationId: "ops",
        enabled: true,
      },
    ]);
    writeFiles(dir, { "automations/daily_report.ts": automation(`{ cron: "0 10 * * 1-5", timezone: "Europe/Paris" }`) });
    expect((await buildAgent(dir)).manifest.agentRevision).not.toBe(manifest.agentRevision);
  });

  it("refuses a schedule that does not parse, naming the file", async () => {
    await expectCode(buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "automations/bad.ts": automation(`"61 * * * *"`) })), "AL_ERR_AUTOMATION_DEFINITION", /automations\/bad\.ts/);
    await expectCode(buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "automations/tz.ts": automation(`{ cron: "0 9 * * *", timezone: "Mars/Olympus" }`) })), "AL_ERR_AUTOMATION_DEFINITION", /Mars\/Olympus/);
    await expectCode(buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "automations/fast.ts": automation(`{ every: 10 }`) })), "AL_ERR_AUTOMATION_DEFINITION", /every/);
    await expectCode(buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "automations/plain.ts": `export default { schedule: "* * * * *", message: "x" };\n` })), "AL_ERR_AUTOMATION_DEFINITION", /defineAutomation/);
  });
});

describe("schedule times", () => {
  it("reads a cron expression in its time zone, across daylight saving time", () => {
    const nine = normalizeSchedule({ cron: "0 9 * * *", timezone: "Europe/Paris" }, "test");
    expect(nextDueAfter(nine, new Date("2026-01-15T00:00:00Z"))?.toISOString()).toBe("2026-01-15T08:00:00.000Z");
    expect(nextDueAfter(nine, new Date("2026-07-15T00:00:00Z"))?.toISOString()).toBe("2026-07-15T07:00:00.000Z");
    expect(nextDueAfter(normalizeSchedule("0 9 * * *", "test"), new Date("2026-07-15T00:00:00Z"))?.toISOString()).toBe("2026-07-15T09:00:00.000Z");
  });

  it("runs a one-shot time once and an interval from its previous due time", () => {
    const once = normalizeSchedule({ at: "2026-12-01T09:00:00Z" }, "test");
    expect(nextDueAfter(once, new Date("2026-11-30T00:00:00Z"))?.toISOString()).toBe("2026-12-01T09:00:00.000Z");
    expect(nextDueAfter(once, new Date("2026-12-01T09:00:00Z"))).toBeNull();
    expect(nextDueAfter(normalizeSchedule({ every: 90_000 }, "test"), new Date("2026-01-01T00:00:00Z"))?.toISOString()).toBe("2026-01-01T00:01:30.000Z");
  });
});


describe("dispatching due times", () => {
  it("runs each due time a short outage missed, once each", async () => {
    const { clock, dispatchAll, submitted } = await automationsAt({ "automations/tick.ts": automation(`{ every: 1000 }`) }, "2026-03-01T10:00:00.000Z");
    clock.now = new Date("2026-03-01T10:00:03.500Z");
    const [result] = await dispatchAll();
    expect(result!.runs.map((run) => run.dueAt)).toEqual(["2026-03-01T10:00:01.000Z", "2026-03-01T10:00:02.000Z", "2026-03-01T10:00:03.000Z"]);
    expect(result!.nextRunAt.toISOString()).toBe("2026-03-01T10:00:04.000Z");
    expect(new Set(submitted.map((entry) => entry.idempotencyKey)).size).toBe(3);
  });

  it("collapses due times missed during downtime into one run, then continues on schedule", async () => {
    const { clock, dispatchAll } = await automationsAt({ "automations/hourly.ts": automation(`"0 * * * *"`) }, "2026-03-01T10:30:00.000Z");
    clock.now = new Date("2026-03-02T10:30:00.000Z");
    const [result] = await dispatchAll();
    expect(result!.runs).toHaveLength(1);
    expect(result!.runs[0]!.dueAt).toBe("2026-03-01T11:00:00.000Z");
    expect(result!.nextRunAt.toISOString()).toBe("2026-03-02T11:00:00.000Z");
    expect(await dispatchAll()).toEqual([]);
  });

  it("starts the same run when a due time is dispatched twice (a replica died before moving the schedule)", async () => {
    const { automations, clock, state } = await automationsAt({ "automations/tick.ts": automation(`{ every: 60000 }`) }, "2026-03-01T10:00:00.000Z");
    clock.now = new Date("2026-03-01T10:01:00.000Z");
    const [row] = await state.claimDueSchedules({ owner: "dead", ttlMs: 1, now: clock.now });
    const first = await automations.dispatchDue(row!);
    const [again] = await state.claimDueSchedules({ owner: "survivor", ttlMs: 60_000, now: new Date(clock.now.getTime() + 5) });
    const second = await automations.dispatchDue(again!);
    expect(second.runs[0]!.runId).toBe(first.runs[0]!.runId);
    expect(second.runs[0]!.created).toBe(false);
  });

  it("runs a one-shot automation once, then it rests", async () => {
    const { automations, clock, dispatchAll } = await automationsAt({ "automations/once.ts": automation(`{ at: "2026-03-01T12:00:00Z" }`) }, "2026-03-01T10:00:00.000Z");
    clock.now = new Date("2026-03-01T12:00:01.000Z");
    const [result] = await dispatchAll();
    expect(result!.runs).toHaveLength(1);
    expect(result!.nextRunAt).toEqual(NEVER);
    clock.now = new Date("2027-01-01T00:00:00.000Z");
    expect(await dispatchAll()).toEqual([]);
    expect((await automations.get("once")).nextRunAt).toBeNull();
  });

  it("keeps a paused automation from being due, across a re-sync, and resumes it from the next due time", async () => {
    const { automations, clock, claim } = await automationsAt({ "automations/tick.ts": automation(`{ every: 60000 }`) }, "2026-03-01T10:00:00.000Z");
    await automations.setPaused("tick", true);
    await automations.syncStatic();
    clock.now = new Date("2026-03-01T11:00:00.000Z");
    expect(await claim()).toEqual([]);
    expect((await automations.get("tick")).paused).toBe(true);
    const resumed = await automations.setPaused("tick", false);
    expect(resumed.nextRunAt).toBe("2026-03-01T11:01:00.000Z");
    await expectCode(automations.setPaused("nope", true), "AL_ERR_AUTOMATION_NOT_FOUND", /tick/);
  });

  it("deletes the rows of automations removed from automations/", async () => {
    const { state } = await automationsAt({ "automations/tick.ts": automation(`{ every: 60000 }`) }, "2026-03-01T10:00:00.000Z");
    expect(await state.listSchedules()).toHaveLength(1);
    const bare = new Automations({ store: state, agentId: automationsAgentId(await state.listSchedules()), statics: [], submit: async () => ({ runId: "r", created: true }), logger: noopLogger() });
    await bare.syncStatic();
    expect(await state.listSchedules()).toEqual([]);
  });
});

describe("creating a dynamic automation", () => {
  it("creates a name once when two creates of it race: the other is refused, the stored one is the winner's", async () => {
    const { automations, make, state } = await automationsAt({}, "2026-03-01T10:00:00.000Z");
    const replica = make();
    const results = await Promise.allSettled([
      automations.create({ name: "digest", schedule: { every: 60_000 }, message: "from the first" }),
      replica.create({ name: "digest", schedule: { every: 60_000 }, message: "from the second" }),
    ]);
    const created = results.filter((result) => result.status === "fulfilled");
    const refused = results.filter((result) => result.status === "rejected");
    expect(created).toHaveLength(1);
    expect(refused.map((result) => (result.reason as { code?: string }).code)).toEqual(["AL_ERR_AUTOMATION_INPUT"]);
    const winner = (created[0] as PromiseFulfilledResult<{ message: string }>).value.message;
    expect((await automations.list()).map((entry) => [entry.name, entry.message])).toEqual([["digest", winner]]);
    expect(await state.listSchedules()).toHaveLength(1);
  });
});

function automationsAgentId(rows: ScheduleRecord[]): string {
  return rows[0]!.id.split(":")[1]!;
}

const managerTool = (body: string) =>
  toolSource({ schema: `{ type: "object", properties: { name: { type: "string" } }, required: ["name"] }`, execute: body });

describe("ctx.automationManager", () => {
  const create = `return ctx.automationManager ? await ctx.automationManager.create({ name: input.name, schedule: { cron: "0 8 * * *", timezone: "America/New_York" }, message: "morning digest" }) : { error: "no automationManager" };`;

  it("is absent unless agent.ts enables dynamic automations", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["schedule"] });
`;
    const agent = startAgent(agentFolder({ "agent.ts": agentTs, "tools/schedule.ts": managerTool(create) }), [{ toolCalls: [{ name: "schedule", input: { name: "digest" } }] }, { text: "done" }], { });
    const { runtime, log } = await agent;
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("completed");
    expect(log.outcomes[0]!.outcome).toMatchObject({ output: { error: "no automationManager" } });
  });

  it("pauses each change for approval when approval is on, and applies it once approved", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["schedule"], dynamicAutomations: { dynamic: true, approval: true } });
`;
    const { runtime, events } = await startAgent(agentFolder({ "agent.ts": agentTs, "tools/schedule.ts": managerTool(create) }), [{ toolCalls: [{ name: "schedule", input: { name: "digest" } }] }, { text: "scheduled" }]);
    const paused = await runtime.run({ message: "schedule a digest" });
    expect(paused.status).toBe("waiting_approval");
    expect(await runtime.automations.list()).toEqual([]);
    const requested = (await events(paused.runId)).find((event) => event.type === "approval.requested")!;
    expect(requested.data).toMatchObject({ toolName: "schedule", change: { action: "create", name: "digest" } });

    const done = await runtime.approve(paused.runId);
    expect(done.status).toBe("completed");
    expect(await runtime.automations.list()).toEqual([
      expect.objectContaining({ name: "digest", source: "dynamic", schedule: { kind: "cron", expression: "0 8 * * *", timezone: "America/New_York" }, message: "morning digest" }),
    ]);
  });

  it("applies only the change the approval showed: a second change in the same call is refused, not applied unseen", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["schedule"], dynamicAutomations: { dynamic: true, approval: true } });
`;
    const twoChanges = `const m = ctx.automationManager;
      const first = await m.create({ name: "digest", schedule: { cron: "0 8 * * *" }, message: "morning digest" });
      try {
        await m.create({ name: "purge", schedule: { cron: "0 3 * * *" }, message: "delete every record" });
        return { first: first.name, second: "applied" };
      } catch (error) {
        return { first: first.name, second: error.code };
      }`;
    const { runtime, events } = await startAgent(agentFolder({ "agent.ts": agentTs, "tools/schedule.ts": managerTool(twoChanges) }), [{ toolCalls: [{ name: "schedule", input: { name: "x" } }] }, { text: "scheduled" }]);
    const paused = await runtime.run({ message: "schedule" });
    const requests = (await events(paused.runId)).filter((event) => event.type === "approval.requested");
    expect(requests.map((event) => (event.data.change as { name: string }).name)).toEqual(["digest"]);

    const done = await runtime.approve(paused.runId);
    expect(done.status).toBe("completed");
    expect((await runtime.automations.list()).map((automation) => automation.name)).toEqual(["digest"]);
    const output = (await events(paused.runId)).find((event) => event.type === "tool.completed")!.data.output;
    expect(output).toEqual({ first: "digest", second: "AL_ERR_CHANGE_NOT_APPROVED" });
  });

  it("refuses a name already taken before asking anyone to approve the change", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["schedule"], dynamicAutomations: { dynamic: true, approval: true } });
`;
    const guarded = `try { ${create} } catch (error) { return { error: error.code, message: error.message }; }`;
    const dir = agentFolder({ "agent.ts": agentTs, "tools/schedule.ts": managerTool(guarded), "automations/digest.ts": automation(`"0 8 * * *"`) });
    const { runtime, events } = await startAgent(dir, [{ toolCalls: [{ name: "schedule", input: { name: "digest" } }] }, { text: "taken" }]);
    await runtime.automations.syncStatic();
    const run = await runtime.run({ message: "schedule a digest" });
    expect(run.status).toBe("completed");
    expect((await events(run.runId)).some((event) => event.type === "approval.requested")).toBe(false);
    const output = (await events(run.runId)).find((event) => event.type === "tool.completed")!.data.output;
    expect(output).toMatchObject({ error: "AL_ERR_AUTOMATION_INPUT", message: expect.stringContaining('an automation named "digest" already exists') });
  });

  it("asks again for a change made by a tool whose own approval showed none", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["schedule"], dynamicAutomations: { dynamic: true, approval: true } });
`;
    const gated = toolSource({ schema: `{ type: "object", properties: { name: { type: "string" } }, required: ["name"] }`, extra: 'needsApproval: approvalRequired("Scheduling is visible."),', execute: create });
    const { runtime, events } = await startAgent(agentFolder({ "agent.ts": agentTs, "tools/schedule.ts": gated }), [{ toolCalls: [{ name: "schedule", input: { name: "digest" } }] }, { text: "scheduled" }]);
    const paused = await runtime.run({ message: "schedule" });
    const again = await runtime.approve(paused.runId);
    // The tool's approval showed its input, not the change: the change asks for its own.
    expect(again.status).toBe("waiting_approval");
    expect(await runtime.automations.list()).toEqual([]);
    const requests = (await events(paused.runId)).filter((event) => event.type === "approval.requested");
    expect(requests.map((event) => event.data.change ?? null)).toEqual([null, expect.objectContaining({ action: "create", name: "digest" })]);
    expect((await runtime.approve(paused.runId)).status).toBe("completed");
    expect((await runtime.automations.list()).map((automation) => automation.name)).toEqual(["digest"]);
  });

  it("answers { deleted: false } for a name no automation has, as runtime.automations.delete does, asking no approval", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["drop"], dynamicAutomations: { dynamic: true, approval: true } });
`;
    const drop = managerTool(`try { return await ctx.automationManager.delete(input.name); } catch (error) { return { error: error.code }; }`);
    const { runtime, events, log } = await startAgent(agentFolder({ "agent.ts": agentTs, "tools/drop.ts": drop }), [{ toolCalls: [{ name: "drop", input: { name: "never-made" } }] }, { text: "done" }]);
    expect(await runtime.automations.delete("never-made")).toEqual({ deleted: false });
    const run = await runtime.run({ message: "drop it" });
    expect(run.status).toBe("completed");
    expect(outputOf(log.outcomes[0]!.outcome)).toEqual({ deleted: false });
    expect((await events(run.runId)).some((event) => event.type === "approval.requested")).toBe(false);
  });

  it("changes dynamic automations without pausing when approval is off, and leaves static ones alone", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["manage"], dynamicAutomations: { dynamic: true } });
`;
    const manage = toolSource({
      schema: `{ type: "object", properties: { action: { type: "string" }, name: { type: "string" } }, required: ["action", "name"] }`,
      execute: `const m = ctx.automationManager;
      try {
        if (input.action === "create") return await m.create({ name: input.name, schedule: { every: 60000 }, message: "poll" });
        if (input.action === "update") return await m.update(input.name, { message: "poll harder" });
        if (input.action === "delete") return await m.delete(input.name);
        return { automations: await m.list() };
      } catch (error) { return { error: error.code }; }`,
    });
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": agentTs, "tools/manage.ts": manage, "automations/nightly.ts": automation(`"0 2 * * *"`) }), [
      { toolCalls: [{ name: "manage", input: { action: "create", name: "poller" } }] },
      { toolCalls: [{ name: "manage", input: { action: "update", name: "poller" } }] },
      { toolCalls: [{ name: "manage", input: { action: "delete", name: "nightly" } }] },
      { toolCalls: [{ name: "manage", input: { action: "create", name: "Bad Name" } }] },
      { toolCalls: [{ name: "manage", input: { action: "list", name: "-" } }] },
      { text: "ok" },
    ]);
    await runtime.automations.syncStatic();
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    const outputs = log.outcomes.map((entry) => outputOf(entry.outcome));
    expect(outputs[1]).toMatchObject({ name: "poller", message: "poll harder" });
    expect(outputs[2]).toEqual({ error: "AL_ERR_AUTOMATION_INPUT" });
    expect(outputs[3]).toEqual({ error: "AL_ERR_AUTOMATION_INPUT" });
    expect((outputs[4] as { automations: Array<{ name: string }> }).automations.map((entry) => entry.name)).toEqual(["nightly", "poller"]);
  });
});
