import { AssemblyLineError, type AgentHarness } from "@assemblyline-agents/core";
import type { PiModelCatalog } from "@assemblyline-agents/pi";

type PiModule = typeof import("@assemblyline-agents/pi");
let loading: Promise<PiModule> | undefined;

/** The Pi engine's package: an optional dependency, so `npm install --omit=optional` leaves it (and pi-ai's provider SDKs) out. */
export const PI_ENGINE_PACKAGE = "@assemblyline-agents/pi";

/**
 * Import an engine package by name; when the package itself is not installed
 * (not a module it imports), the error says which command installs it.
 */
export async function importEngine<T>(packageName: string): Promise<T> {
  try {
    return (await import(packageName)) as T;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND" && new RegExp(`['"]${packageName}['"]`).test((error as Error).message);
    if (!missing) throw error;
    throw new AssemblyLineError("AL_ERR_HARNESS", `this run needs the engine ${packageName}, which is not installed (it is an optional dependency of @assemblyline-agents/node)`, {
      fix: `npm install ${packageName}, or choose another engine for the model (agentHarness / modelHarnesses).`,
      cause: error,
    });
  }
}

/**
 * The Pi engine, and with it pi-ai's model catalog (thousands of modules),
 * loads on first use: `help`, `plugins ...`, and runs on a scripted model or
 * another engine never pay for it. pi-ai itself imports each provider's SDK
 * only when a run first calls that provider.
 */
export function loadPi(): Promise<PiModule> {
  loading ??= importEngine<PiModule>(PI_ENGINE_PACKAGE);
  // A failed load is not cached: `npm install` in another terminal fixes the next run.
  loading.catch(() => (loading = undefined));
  return loading;
}

/** The name piAgentHarness() reports (PI_HARNESS_NAME), known without loading it; a test keeps the two equal. */
export const PI_ENGINE_NAME = "pi";

/** The host's default engine for real models, loaded by its first turn; `env` is where it reads API keys (default process.env). */
export async function defaultPiHarness(models?: PiModelCatalog, env?: Record<string, string | undefined>): Promise<AgentHarness> {
  const options = { ...(models ? { models } : {}), ...(env ? { env } : {}) };
  // A host's declared models are checked at start, so a typo fails the boot: those load the engine now.
  if (models) return (await loadPi()).piAgentHarness(options);
  let harness: Promise<AgentHarness> | undefined;
  return {
    name: PI_ENGINE_NAME,
    runTurn: async (input, ctx) => {
      if (!harness) {
        const made = loadPi().then((pi) => pi.piAgentHarness(options));
        // Like loadPi's, a failed load is not kept: the next run tries again (after `npm install`).
        made.catch(() => {
          if (harness === made) harness = undefined;
        });
        harness = made;
      }
      return (await harness).runTurn(input, ctx);
    },
  };
}
