import { expect, it } from "vitest";
import { describeReplayProblems, type ReplayStressReport } from "../replay-stress.js";

/**
 * A vitest test that an agent's tools are safe to replay: `stress` runs
 * `replayStress(...)` from `@assemblyline-agents/runtime` (the kit does not
 * import the kernel), and the test fails listing every boundary where the
 * resumed run did something the recorded one did not.
 */
export function itIsReplaySafe(title: string, stress: () => Promise<ReplayStressReport>, timeoutMs = 120_000): void {
  it(
    title,
    async () => {
      const report = await stress();
      expect(report.boundaries, "the recorded run made no durable write").toBeGreaterThan(1);
      expect(describeReplayProblems(report)).toEqual([]);
    },
    timeoutMs,
  );
}
