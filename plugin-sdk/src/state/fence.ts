import { AssemblyLineError } from "../errors.js";
import type { RunFence, RunLease } from "./runs.js";

/** Whether `lease` (the run's current one) is still the one `fence` names. */
export function fenceHolds(lease: Pick<RunLease, "owner" | "token"> | null | undefined, fence: RunFence): boolean {
  return lease !== null && lease !== undefined && lease.owner === fence.owner && lease.token === fence.token;
}

/** The refusal every state store gives a write whose fence is no longer current. */
export function staleFenceError(runId: string, fence: RunFence, current: Pick<RunLease, "owner" | "token"> | null | undefined): AssemblyLineError {
  const now = current ? `token ${current.token}` : "no lease";
  return new AssemblyLineError("AL_ERR_RUN_LEASE_LOST", `write to run ${runId} refused: it was made under lease token ${fence.token}, but the run now has ${now}`, {
    fix: "Nothing to do: another replica took the run over (or it finished) and continues it from its journal; this process stops writing to it.",
    details: { runId, owner: fence.owner, token: fence.token, currentToken: current?.token ?? null },
  });
}
