import { describe, expect, it } from "vitest";
import type { TelemetrySink } from "@assemblyline-agents/core";
import { CLI_TELEMETRY_FLUSH_MS, exitBoundedSink } from "../src/cli/exit-telemetry.js";

describe("a command's exit flush of instrumentation.ts's sink", () => {
  it("asks the sink to flush within the command's bound, and hands it the runtime's logger", async () => {
    const asked: Array<{ timeoutMs?: number } | undefined> = [];
    const loggers: unknown[] = [];
    const sink: TelemetrySink = { export() {}, flush: async (options) => void asked.push(options), useLogger: (logger) => void loggers.push(logger) };
    const bounded = exitBoundedSink(sink);
    const logger = { debug() {}, info() {}, warn() {}, error() {} };
    bounded.useLogger?.(logger);
    await bounded.flush?.();
    await bounded.flush?.({ timeoutMs: 10 });
    expect(asked).toEqual([{ timeoutMs: CLI_TELEMETRY_FLUSH_MS }, { timeoutMs: 10 }]);
    expect(loggers).toEqual([logger]);
  });

  it("does not wait past the bound for a sink that ignores it", async () => {
    const sink: TelemetrySink = { export() {}, flush: () => new Promise<void>(() => {}) };
    await expect(exitBoundedSink(sink, 20).flush?.()).resolves.toBeUndefined();
  });
});
