import { LocalScheduler } from "@assemblyline-agents/local";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { describe, expect, it } from "vitest";

describe("the local scheduler's start options", () => {
  it("refuses a lease not below the host's automationCatchUpMs, naming both and how to fix it", async () => {
    const state = new InMemoryStateAdapter();
    for (const [leaseMs, automationCatchUpMs] of [
      [300_000, 180_000],
      [180_000, 180_000],
      [60_000, 30_000],
    ] as const) {
      const scheduler = new LocalScheduler({ store: state, leaseMs });
      const refusal = await scheduler.start(async () => undefined, { automationCatchUpMs }).then(
        () => undefined,
        (error: unknown) => error as { code: string; message: string; fix: string },
      );
      await scheduler.stop();
      expect(refusal, `${leaseMs} vs ${automationCatchUpMs}`).toMatchObject({
        code: "AL_ERR_STATE_INPUT_INVALID",
        message: expect.stringMatching(new RegExp(`leaseMs is ${leaseMs}, not below the runtime's automationCatchUpMs \\(${automationCatchUpMs}\\)`)),
        fix: expect.stringMatching(/leaseMs.*below.*automationCatchUpMs/),
      });
    }
  });

  it("starts with a lease below it, and with none given (the defaults: 60 s under 180 s)", async () => {
    const state = new InMemoryStateAdapter();
    for (const options of [{ automationCatchUpMs: 180_000 }, { automationCatchUpMs: 60_001 }, {}]) {
      const scheduler = new LocalScheduler({ store: state, leaseMs: 60_000 });
      await scheduler.start(async () => undefined, options);
      await scheduler.stop();
    }
    const defaults = new LocalScheduler({ store: state });
    await defaults.start(async () => undefined, { automationCatchUpMs: 180_000 });
    await defaults.stop();
  });
});
