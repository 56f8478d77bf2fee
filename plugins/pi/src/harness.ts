import type { AgentHarness } from "@assemblyline-agents/core";
import { checkPiOptions } from "./config-schema.js";
import { PI_HARNESS_NAME } from "./continuation.js";
import { resolvePiModel } from "./model-resolution.js";
import type { PiHarnessOptions } from "./options.js";
import { runPiTurn } from "./turn-loop.js";

/**
 * The default engine: any model pi-ai's catalog knows, plus the host's `models`.
 * Options are checked now against config.schema.json (an unknown or misspelt key,
 * at any level, is refused rather than ignored), and so are the declared models,
 * so a typo fails the host at start, not a run.
 */
export function piAgentHarness(options: PiHarnessOptions = {}): AgentHarness {
  checkPiOptions(options);
  for (const spec of Object.keys(options.models ?? {})) resolvePiModel(spec, options.models);
  const settings: PiHarnessOptions = { ...options };
  return {
    name: PI_HARNESS_NAME,
    runTurn: (input, ctx) => runPiTurn(input, ctx, settings),
  };
}
