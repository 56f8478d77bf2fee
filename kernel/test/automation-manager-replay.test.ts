import { describe, expect, it } from "vitest";
import { AssemblyLineError, type NewRunEvent, type RunEvent, type RunStateChange, type ScheduleRecord } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { CrashOnceBefore } from "./support/crash-once-state.js";
import { outputOf } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";

/**
 * In-memory state that, once `watching`, dies at the first append after an automation row is
 * written or deleted: the change is stored, nothing the run records after it is.
 */
class CrashAfterAutomationWrite extends InMemoryStateAdapter {
  watching = false;
  private written = false;
  crashed = false;

  override async upsertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<void> {
    await super.upsertSchedule(schedule);
    this.wrote(schedule.id);
  }

  override async insertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<boolean> {
    const inserted = await super.insertSchedule(schedule);
    if (inserted) this.wrote(schedule.id);
    return inserted;
  }

  override async deleteSchedule(id: string): Promise<void> {
    await super.deleteSchedule(id);
    this.wrote(id);
  }

  override async appendEvents(runId: string, events: NewRunEvent[], change?: RunStateChange, options?: Parameters<InMemoryStateAdapter["appendEvents"]>[3]): Promise<RunEvent[]> {
    if (this.written && !this.crashed) {
      this.crashed = true;
      throw new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", "the state store went away right after the automation was written");
    }
    return super.appendEvents(runId, events, change, options);
  }

  private wrote(id: string): void {
    if (this.watching && id.startsWith("automation:")) this.written = true;
  }
}

const agentTs = (approval: boolean) => `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", dynamicAutomations: { dynamic: true, approval: ${approval} } });
`;

/** One tool for every change; a refusal comes back as the tool's output, so a test sees which. */
const manage = toolSource({
  upFront: true,
  schema: `{ type: "object", properties: { action: { type: "string" }, name: { type: "string" } }, required: ["action", "name"] }`,
  execute: `const m = ctx.automationManager;
    try {
      if (input.action === "create") return await m.create({ name: input.name, schedule: { every: 1000 }, message: "poll" });
      if (input.action === "update") return await m.update(input.name, { schedule: { every: 1000 }, message: "poll harder" });
      if (input.action === "delete") return await m.delete(input.name);
      return { automations: await m.list() };
    } catch (error) {
      // The simulated crash: a host that died would not go on to answer.
      if (error.code === "AL_ERR_STATE_UNAVAILABLE") throw error;
      return { error: error.code ?? String(error), message: error.message };
    }`,
});

const pause = (ms: number) => new Promise((resolvePause) => setTimeout(resolvePause, ms));

/**
 * A run whose one tool call makes `action` on "poller" and whose host dies right after the change
 * is stored (before anything after it is recorded); then resumed, as recovery resumes it, over a
 * second later, so a due time computed again would differ.
 */
async function changeAcrossACrash(action: "create" | "update" | "delete", options: { approval?: boolean; existing?: boolean } = {}) {
  const state = new CrashAfterAutomationWrite();
  const { runtime, log } = await startAgent(agentFolder({ "agent.ts": agentTs(options.approval ?? false), "tools/manage.ts": manage }), [{ toolCalls: [{ name: "manage", input: { action, name: "poller" } }] }, { text: "done" }], { state });
  if (options.existing) await runtime.automations.create({ name: "poller", schedule: { every: 60_000 }, message: "poll" });
  const rowsBefore = await state.listSchedules();
  state.watching = true;
  let first: unknown;
  let runId: string;
  if (options.approval) {
    const paused = await runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    runId = paused.runId;
    first = await runtime.approve(runId).then(() => undefined, (error: unknown) => error);
  } else {
    first = await runtime.run({ message: "go" }).then(() => undefined, (error: unknown) => error);
    runId = (await state.listRuns()).runs[0]!.id;
  }
  expect(state.crashed).toBe(true);
  expect(first).toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
  // What the store held once the first attempt's change landed: what that attempt would have answered.
  const stored = await runtime.automations.list();
  const rowsStored = await state.listSchedules();
  await pause(1_100);
  const resumed = await runtime.resume(runId);
  return { runtime, state, resumed, stored, rowsBefore, rowsStored, output: outputOf(log.outcomes.at(-1)!.outcome), outcomes: log.outcomes.length };
}

describe("ctx.automationManager across a crash after the change was stored", () => {
  it("create: the call that runs again answers the automation it created, and creates nothing more", async () => {
    const { runtime, resumed, stored, rowsStored, state, output } = await changeAcrossACrash("create");
    expect(resumed.status).toBe("completed");
    expect(stored.map((automation) => automation.name)).toEqual(["poller"]);
    expect(output).toEqual(stored[0]);
    expect(await runtime.automations.list()).toEqual(stored);
    expect(await state.listSchedules()).toEqual(rowsStored);
  });

  it("create with approval: the approved call that runs again answers the automation it created", async () => {
    const { runtime, resumed, stored, rowsStored, state, output } = await changeAcrossACrash("create", { approval: true });
    expect(resumed.status).toBe("completed");
    expect(stored.map((automation) => automation.name)).toEqual(["poller"]);
    expect(output).toEqual(stored[0]);
    expect(await runtime.automations.list()).toEqual(stored);
    expect(await state.listSchedules()).toEqual(rowsStored);
  });

  it("update: the call that runs again answers the update as stored, and does not re-time the automation", async () => {
    const { runtime, resumed, stored, rowsBefore, rowsStored, state, output } = await changeAcrossACrash("update", { existing: true });
    expect(resumed.status).toBe("completed");
    expect(stored).toEqual([expect.objectContaining({ name: "poller", message: "poll harder", schedule: { kind: "every", everyMs: 1000 } })]);
    expect(rowsStored).not.toEqual(rowsBefore);
    expect(output).toEqual(stored[0]);
    expect(await runtime.automations.list()).toEqual(stored);
    expect(await state.listSchedules()).toEqual(rowsStored);
  });

  it("delete: the call that runs again answers deleted: true", async () => {
    const { runtime, resumed, stored, output } = await changeAcrossACrash("delete", { existing: true });
    expect(resumed.status).toBe("completed");
    expect(stored).toEqual([]);
    expect(output).toEqual({ deleted: true });
    expect(await runtime.automations.list()).toEqual([]);
  });
});

describe("ctx.automationManager across a crash before the tool call's answer was recorded", () => {
  it.each(["create", "update", "delete"] as const)("%s: the call that runs again answers as the first attempt did", async (action) => {
    const state = new CrashOnceBefore("tool.completed");
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": agentTs(false), "tools/manage.ts": manage }), [{ toolCalls: [{ name: "manage", input: { action, name: "poller" } }] }, { text: "done" }], { state });
    if (action !== "create") await runtime.automations.create({ name: "poller", schedule: { every: 60_000 }, message: "poll" });
    await expect(runtime.run({ message: "go" })).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    const stored = await runtime.automations.list();
    const rows = await state.listSchedules();
    await pause(1_100);
    const [run] = (await state.listRuns()).runs;
    expect((await runtime.resume(run!.id)).status).toBe("completed");
    expect(outputOf(log.outcomes.at(-1)!.outcome)).toEqual(action === "delete" ? { deleted: true } : stored[0]);
    expect(await state.listSchedules()).toEqual(rows);
  });
});

/** In-memory state whose next automation row write or delete, once `failing`, fails without being made: the host died right before it. */
class DiesBeforeAutomationWrite extends InMemoryStateAdapter {
  failing = false;

  override async upsertSchedule(schedule: Omit<ScheduleRecord, "lease">): Promise<void> {
    this.dieIfFailing();
    return super.upsertSchedule(schedule);
  }

  override async deleteSchedule(id: string): Promise<void> {
    this.dieIfFailing();
    return super.deleteSchedule(id);
  }

  private dieIfFailing(): void {
    if (!this.failing) return;
    this.failing = false;
    throw new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", "the state store went away before the automation was written");
  }
}

describe("ctx.automationManager across a crash before the change was stored, with the automation changed meanwhile", () => {
  async function decidedThenChanged(action: "update" | "delete", meanwhile: (runtime: Awaited<ReturnType<typeof startAgent>>["runtime"]) => Promise<void>) {
    const state = new DiesBeforeAutomationWrite();
    const { runtime, log } = await startAgent(agentFolder({ "agent.ts": agentTs(false), "tools/manage.ts": manage }), [{ toolCalls: [{ name: "manage", input: { action, name: "poller" } }] }, { text: "done" }], { state });
    await runtime.automations.create({ name: "poller", schedule: { every: 60_000 }, message: "poll" });
    state.failing = true;
    await expect(runtime.run({ message: "go" })).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    await meanwhile(runtime);
    const [run] = (await state.listRuns()).runs;
    expect((await runtime.resume(run!.id)).status).toBe("completed");
    return { runtime, output: outputOf(log.outcomes.at(-1)!.outcome) };
  }

  it("update: an automation deleted since the update was decided is not brought back", async () => {
    const { runtime, output } = await decidedThenChanged("update", (runtime) => runtime.automations.delete("poller").then(() => undefined));
    expect(output).toMatchObject({ name: "poller", message: "poll harder" });
    expect(await runtime.automations.list()).toEqual([]);
  });

  it("delete: a new automation created under the name since the delete was decided is left alone", async () => {
    const { runtime, output } = await decidedThenChanged("delete", async (runtime) => {
      await runtime.automations.delete("poller");
      await runtime.automations.create({ name: "poller", schedule: { every: 60_000 }, message: "the new one" });
    });
    expect(output).toEqual({ deleted: true });
    expect((await runtime.automations.list()).map((automation) => automation.message)).toEqual(["the new one"]);
  });
});
