import { describe, expect, it } from "vitest";
// @ts-expect-error: the bench is plain ESM, run with node, no types.
import { workloadTargets } from "../bench/workload-bench.js";

/**
 * The bench's verdicts on the performance targets: a target is "proven impossible" only from
 * figures measured in the same run, so a noisy process or a machine that changed midway must not
 * turn a miss into a proof.
 */
const MB = 1024 * 1024;
const levels = (runsPerSecond: number) => [1, 16, 50].map((concurrency) => ({ concurrency, runsPerSecond }));

interface Peaks {
  memory: number[];
  pi: number[];
  floor?: number[];
}

/** A workload result with only what the peak-RSS target reads: each system's peak per process, its median first. */
function peakResult({ memory, pi, floor }: Peaks) {
  const system = (samples: number[]) => {
    const sorted = samples.slice().sort((a, b) => a - b);
    return { levels: levels(1000), peakRssBytes: sorted[Math.floor((sorted.length - 1) / 2)]! * MB, peakRssSamples: samples.map((mb) => mb * MB) };
  };
  return {
    levels: [1, 16, 50],
    paused: { hostBytesPerRun: 0 },
    systems: {
      memory: { ...system(memory), stateRowsBytes: 10 * MB },
      "pi-agent-core": system(pi),
      ...(floor ? { "pi-agent-core-rows": { peakOnly: true, ...system(floor) } } : {}),
    },
  };
}

const peakTarget = (peaks: Peaks) => workloadTargets(peakResult(peaks))["peak RSS at 50 concurrent, memory / pi-agent-core"];

describe("bench: peak RSS against its floor", () => {
  it("is proven out of reach when every floor process peaks above every pi-agent-core process", () => {
    const target = peakTarget({ memory: [115, 119, 119], pi: [107, 108, 106], floor: [118, 118, 115] });
    expect(target.met).toBe(false);
    expect(target.value).toBeCloseTo(119 / 107);
    expect(target.floor.minRatio).toBeCloseTo(118 / 107);
    expect(target.floor.figureOverFloor).toBeCloseTo(119 / 118);
    expect(target.provenImpossible).toBe(true);
  });

  it("proves nothing when one pi-agent-core process peaked as high as a floor process", () => {
    const target = peakTarget({ memory: [115, 119, 119], pi: [107, 108, 116], floor: [118, 118, 115] });
    expect(target.floor.minRatio).toBeGreaterThan(1);
    expect(target.provenImpossible).toBe(false);
  });

  it("proves nothing without a floor, and a figure within pi-agent-core's peak meets the target", () => {
    expect(peakTarget({ memory: [119], pi: [107] }).provenImpossible).toBeUndefined();
    const met = peakTarget({ memory: [104, 105, 103], pi: [107, 108, 106], floor: [118, 118, 115] });
    expect(met.met).toBe(true);
  });
});

describe("bench: in-memory against pi-agent-core, bounded by the writes alone", () => {
  const speedResult = (memory: number, pi: number, writesAlone: number) => ({
    levels: [1, 16, 50],
    paused: { hostBytesPerRun: 0 },
    systems: {
      memory: { levels: levels(memory) },
      "pi-agent-core": { levels: levels(pi) },
      "memory-writes": { ceiling: true, levels: levels(writesAlone), callsPerRun: { createRun: 1 }, eventsPerRun: 14 },
      bare: { levels: levels(1_000_000) },
    },
  });
  const sequential = (memory: number, pi: number, writesAlone: number) => workloadTargets(speedResult(memory, pi, writesAlone))["memory / pi-agent-core, sequential"];

  it("is proven out of reach when the writes alone and the bare loop stay under 2x and the figure under them", () => {
    const target = sequential(5_000, 16_000, 16_000);
    expect(target.bound.maxRatio).toBeLessThan(2);
    expect(target.provenImpossible).toBe(true);
  });

  it("proves nothing when the ceiling allows the goal, or when the figure is above its own ceiling", () => {
    expect(sequential(5_000, 16_000, 40_000).provenImpossible).toBe(false);
    // The runtime faster than its ceiling: the machine changed between the two measurements.
    expect(sequential(17_000, 16_000, 16_000).provenImpossible).toBe(false);
  });

  it("is proven out of reach when the figure lands on its ceiling, a hair above it, as a runtime at its bound does", () => {
    const target = sequential(16_200, 16_000, 16_000);
    expect(target.value).toBeGreaterThan(target.bound.maxRatio);
    expect(target.provenImpossible).toBe(true);
  });

  it("proves nothing when the ceiling, off by the machine's noise, would allow the goal", () => {
    const target = sequential(5_000, 10_000, 19_500);
    expect(target.bound.maxRatio).toBeLessThan(2);
    expect(target.bound.maxRatio * 1.05).toBeGreaterThan(2);
    expect(target.provenImpossible).toBe(false);
  });
});
