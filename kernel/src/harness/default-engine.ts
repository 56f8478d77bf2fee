import { AssemblyLineError, type AgentHarness } from "@assemblyline-agents/core";

/** The default engine's package: an optional peer, loaded by name only when a run needs it. */
export const DEFAULT_ENGINE_PACKAGE = "@assemblyline-agents/pi";

interface PiModule {
  piAgentHarness(options: { models?: Record<string, unknown> }): AgentHarness;
}

/**
 * Pi, for embedders that pass no engine: `new OpenEveRuntime({ manifest, state })`
 * runs real models as the spec promises. The kernel has no compile-time
 * dependency on it; a host that composes its own engine never loads it.
 */
export async function loadDefaultEngine(models: Record<string, unknown> | undefined): Promise<AgentHarness> {
  let module: PiModule;
  try {
    const name = DEFAULT_ENGINE_PACKAGE;
    module = (await import(name)) as PiModule;
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_HARNESS", `the default engine ${DEFAULT_ENGINE_PACKAGE} is not installed`, {
      fix: `npm install ${DEFAULT_ENGINE_PACKAGE}, or pass defaultHarness / agentHarness to OpenEveRuntime.`,
      cause: error,
    });
  }
  return module.piAgentHarness(models ? { models } : {});
}
