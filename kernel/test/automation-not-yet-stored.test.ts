import { describe, expect, it } from "vitest";
import { automationsAt } from "./support/automations-at.js";

const automation = (schedule: string, message: string) => `import { defineAutomation } from "@assemblyline-agents/core";
export default defineAutomation({ schedule: ${schedule}, message: ${JSON.stringify(message)} });
`;

describe("a build's automations/ files with no row in the store yet (an operator's CLI, before any host synced them)", () => {
  it("are listed apart, as the sync would write them, without writing anything", async () => {
    const { make, bundle, state } = await automationsAt({ "automations/daily.ts": automation(`"0 9 * * *"`, "daily") }, "2026-03-02T08:00:00.000Z");
    const stored = await state.listSchedules();
    const laptop = make([...bundle.manifest.automations, { ...bundle.manifest.automations[0]!, name: "nightly", message: "nightly" }]);
    expect((await laptop.list()).map((entry) => entry.name)).toEqual(["daily"]);
    expect(await laptop.notYetStored()).toEqual([
      { name: "nightly", source: "static", schedule: { kind: "cron", expression: "0 9 * * *", timezone: "UTC" }, message: "nightly", conversationId: null, enabled: true, paused: false, nextRunAt: "2026-03-02T09:00:00.000Z", held: false },
    ]);
    expect(await state.listSchedules()).toEqual(stored);
  });

  it("run once by runNow as the build defines them, with no row written", async () => {
    const { make, bundle, state, submitted } = await automationsAt({}, "2026-03-02T08:00:00.000Z");
    const laptop = make([{ ...(await automationsAt({ "automations/nightly.ts": automation(`"0 2 * * *"`, "nightly") }, "2026-03-02T08:00:00.000Z")).bundle.manifest.automations[0]! }]);
    expect(bundle.manifest.automations).toEqual([]);
    expect(await laptop.runNow("nightly")).toMatchObject({ created: true });
    expect(submitted.map((run) => run.message)).toEqual(["nightly"]);
    expect(await state.listSchedules()).toEqual([]);
  });
});
