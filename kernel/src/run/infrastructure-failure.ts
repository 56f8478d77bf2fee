import { AssemblyLineError, isAssemblyLineError } from "@assemblyline-agents/core";

/**
 * A failure of the state store itself (connection lost, database restarting), or
 * of the process under the run (its lease lost, its host shutting down), is
 * not the run's fault: the run is left as it is, its lease lapses, and recovery
 * resumes it from its journal instead of marking it failed.
 */
export function isInfrastructureFailure(error: unknown): boolean {
  return (
    isAssemblyLineError(error, "AL_ERR_STATE_UNAVAILABLE") ||
    isAssemblyLineError(error, "AL_ERR_RUN_LEASE_LOST") ||
    // The host shuts down under the run (a plugin's resources closed): the next start resumes it.
    isAssemblyLineError(error, "AL_ERR_HOST_DRAINING") ||
    // The child of a spawning call is driven elsewhere: the parent waits rather than fails.
    isAssemblyLineError(error, "AL_ERR_SUBAGENT_BUSY")
  );
}

/** This process lost the run to another replica: it stops writing, and the new owner continues. */
export function leaseLost(runId: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_RUN_LEASE_LOST", `this process lost the lease of run ${runId} to another replica`, {
    fix: "Nothing to do: the replica holding the lease continues the run from its journal.",
  });
}
