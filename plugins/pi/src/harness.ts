import type { AgentHarness } from "@assemblyline-agents/core";
import { PI_HARNESS_NAME } from "./continuation.js";
import { resolvePiModel } from "./model-resolution.js";
import type { PiHarnessOptions, PiRetryOptions } from "./options.js";
import { runPiTurn } from "./turn-loop.js";

/**
 * The default engine: any model pi-ai's catalog knows, plus the host's `models`.
 * Declared models are checked now so a typo fails the host at start, not a run.
 */
export function piAgentHarness(options: PiHarnessOptions = {}): AgentHarness {
  checkRetryOptions(options.retry);
  for (const spec of Object.keys(options.models ?? {})) resolvePiModel(spec, options.models);
  const settings: PiHarnessOptions = { ...options };
  return {
    name: PI_HARNESS_NAME,
    runTurn: (input, ctx) => runPiTurn(input, ctx, settings),
  };
}

function checkRetryOptions(retry: PiRetryOptions | undefined): void {
  for (const [name, value] of Object.entries(retry ?? {})) {
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value < 0)) {
      throw new TypeError(`piAgentHarness: retry.${name} must be a non-negative number, got ${String(value)}`);
    }
  }
}
