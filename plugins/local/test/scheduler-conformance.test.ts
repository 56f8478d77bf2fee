import { describeSchedulerConformance } from "@assemblyline-agents/core/testkit";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { LocalScheduler } from "../src/index.js";

describeSchedulerConformance("LocalScheduler", () => {
  const schedules = new InMemoryStateAdapter();
  const scheduler = new LocalScheduler({ store: schedules, pollIntervalMs: 20 });
  return { state: { scheduler, schedules }, cleanup: () => scheduler.stop() };
});
