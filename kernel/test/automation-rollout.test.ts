import { describe, expect, it } from "vitest";
import { noopLogger, type RuntimeLogger } from "@assemblyline-agents/core";
import { automationsAt } from "./support/automations-at.js";

const automation = (schedule: string, message = "send the report") => `import { defineAutomation } from "@assemblyline-agents/core";
export default defineAutomation({ schedule: ${schedule}, message: ${JSON.stringify(message)} });
`;

function recordingLogger(): { logger: RuntimeLogger; warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  return { logger: { ...noopLogger(), warn: (fields) => void warnings.push(fields) }, warnings };
}

describe("a rolling deploy, where hosts of two builds dispatch the same store", () => {
  it("never runs a file the new build removed, though a host of the old build restarting mid-rollout writes its row back", async () => {
    // Build 1 has report.ts; build 2 removed it.
    const { make, bundle, clock, dispatchAll, runs, state } = await automationsAt({ "automations/report.ts": automation(`"0 9 * * *"`) }, "2026-03-01T08:00:00.000Z");
    const { logger, warnings } = recordingLogger();
    const build2 = make([], logger);
    await build2.syncStatic();
    expect(await build2.list()).toEqual([]);
    // A build 1 host restarts during the rollout and syncs its files again.
    clock.now = new Date("2026-03-01T08:01:00.000Z");
    await make(bundle.manifest.automations).syncStatic();

    // The rollout is over: only build 2 hosts dispatch. The row is left for a while (a build 1 host may still be up)...
    clock.now = new Date("2026-03-01T09:00:01.000Z");
    expect((await dispatchAll(build2)).flatMap((result) => result.runs)).toEqual([]);
    // ...and once no build 1 host ran it within automationCatchUpMs, it is removed, still without running.
    clock.now = new Date("2026-03-01T09:03:01.000Z");
    expect((await dispatchAll(build2)).flatMap((result) => result.runs)).toEqual([]);
    expect(await state.listSchedules()).toEqual([]);
    clock.now = new Date("2026-03-02T09:00:01.000Z");
    expect(await dispatchAll(build2)).toEqual([]);
    expect(runs.size).toBe(0);
    expect(warnings).toContainEqual(expect.objectContaining({ event: "automation.other_build", automation: "report", action: "removed" }));
  });

  it("leaves a row of the other build to that build's hosts while they run, so neither build undoes the other's", async () => {
    const { make, bundle, clock, dispatchAll, runs } = await automationsAt({ "automations/report.ts": automation(`"0 9 * * *"`, "old words") }, "2026-03-01T08:00:00.000Z");
    const build1 = make(bundle.manifest.automations);
    const added = { ...bundle.manifest.automations[0]!, name: "summary" };
    const build2 = make([...bundle.manifest.automations.map((entry) => ({ ...entry, message: "new words" })), added]);
    await build2.syncStatic();
    clock.now = new Date("2026-03-01T09:00:01.000Z");
    // A build 1 host claims first: it starts neither of build 2's rows, and leaves them as they are.
    expect((await dispatchAll(build1)).flatMap((result) => result.runs)).toEqual([]);
    expect((await build1.list()).map((info) => [info.name, info.message, info.nextRunAt])).toEqual([
      ["report", "new words", "2026-03-01T09:00:00.000Z"],
      ["summary", "old words", "2026-03-01T09:00:00.000Z"],
    ]);
    // A build 2 host then runs each with build 2's definition.
    expect((await dispatchAll(build2)).flatMap((result) => result.runs)).toHaveLength(2);
    expect([...runs.values()].map((run) => (run.metadata as { automation: { name: string } }).automation.name).sort()).toEqual(["report", "summary"]);
    expect((await build2.get("report")).nextRunAt).toBe("2026-03-02T09:00:00.000Z");
  });

  it("puts its own definition in place of a changed file's old row once no host of the old build runs it, and runs that", async () => {
    const { make, bundle, clock, dispatchAll, runs } = await automationsAt({ "automations/report.ts": automation(`"0 9 * * *"`, "old words") }, "2026-03-01T08:00:00.000Z");
    const build2 = make(bundle.manifest.automations.map((entry) => ({ ...entry, message: "new words" })));
    // Only build 2 hosts remain, but the row is build 1's (a build 1 host synced last).
    clock.now = new Date("2026-03-01T09:03:01.000Z");
    expect((await dispatchAll(build2)).flatMap((result) => result.runs)).toEqual([]);
    expect((await build2.get("report")).message).toBe("new words");
    const [late] = await dispatchAll(build2);
    expect(late!.runs).toHaveLength(1);
    expect(runs.size).toBe(1);
  });
});

describe("names shared by a file and a dynamic automation", () => {
  it("gives the name to the file: the dynamic automation of that name is removed with a warning carrying its definition, and one automation runs", async () => {
    const { automations, make, clock, dispatchAll, runs } = await automationsAt({}, "2026-03-01T08:00:00.000Z");
    await automations.create({ name: "report", schedule: "0 9 * * *", message: "dynamic report" });
    const { logger, warnings } = recordingLogger();
    const rebuilt = make([{ name: "report", source: { file: "automations/report.ts", hash: "h" }, schedule: { kind: "cron", expression: "0 9 * * *", timezone: "UTC" }, message: "static report", conversationId: null, enabled: true }], logger);
    await rebuilt.syncStatic();
    expect((await rebuilt.list()).map((info) => [info.name, info.source])).toEqual([["report", "static"]]);
    expect(warnings).toContainEqual(expect.objectContaining({ event: "automation.name_taken_by_file", automation: "report", removed: expect.objectContaining({ message: "dynamic report" }) }));
    clock.now = new Date("2026-03-01T09:00:01.000Z");
    await dispatchAll(rebuilt);
    expect([...runs.keys()]).toHaveLength(1);
    // The operator's pause reaches the one automation of that name.
    expect((await rebuilt.setPaused("report", true)).source).toBe("static");
    await expect(rebuilt.create({ name: "report", schedule: "0 9 * * *", message: "again" })).rejects.toMatchObject({ code: "AL_ERR_AUTOMATION_INPUT", message: expect.stringContaining('"report" already exists') });
  });

  it("refuses to create a dynamic automation with the name of a file of this build, even while the file's row is missing", async () => {
    const { make, state } = await automationsAt({ "automations/report.ts": automation(`"0 9 * * *"`) }, "2026-03-01T08:00:00.000Z");
    // A host of an older build, without report.ts, synced last.
    await make([]).syncStatic();
    expect(await state.listSchedules()).toEqual([]);
    await expect(make().create({ name: "report", schedule: "0 9 * * *", message: "mine" })).rejects.toMatchObject({ code: "AL_ERR_AUTOMATION_INPUT", message: expect.stringContaining('"report" already exists') });
  });
});
