import { isAssemblyLineError } from "@assemblyline-agents/core";

/**
 * A failure of the state store itself (connection lost, database restarting) is
 * not the run's fault: the run is left as it is, its lease lapses, and recovery
 * resumes it from its journal instead of marking it failed.
 */
export function isInfrastructureFailure(error: unknown): boolean {
  return isAssemblyLineError(error, "AL_ERR_STATE_UNAVAILABLE");
}
