import type { AgentHarness } from "@assemblyline-agents/core";
import type { PiModelCatalog } from "@assemblyline-agents/pi";

type PiModule = typeof import("@assemblyline-agents/pi");
let loading: Promise<PiModule> | undefined;

/**
 * The Pi engine, and with it pi-ai's model catalog (thousands of modules),
 * loads on first use: `help`, `plugins ...`, and runs on a scripted model or
 * another engine never pay for it. pi-ai itself imports each provider's SDK
 * only when a run first calls that provider.
 */
export function loadPi(): Promise<PiModule> {
  loading ??= import("@assemblyline-agents/pi");
  return loading;
}

/** The name piAgentHarness() reports (PI_HARNESS_NAME), known without loading it; a test keeps the two equal. */
export const PI_ENGINE_NAME = "pi";

/** The host's default engine for real models, loaded by its first turn. */
export async function defaultPiHarness(models?: PiModelCatalog): Promise<AgentHarness> {
  // A host's declared models are checked at start, so a typo fails the boot: those load the engine now.
  if (models) return (await loadPi()).piAgentHarness({ models });
  let harness: Promise<AgentHarness> | undefined;
  return {
    name: PI_ENGINE_NAME,
    runTurn: async (input, ctx) => {
      harness ??= loadPi().then((pi) => pi.piAgentHarness({}));
      return (await harness).runTurn(input, ctx);
    },
  };
}
