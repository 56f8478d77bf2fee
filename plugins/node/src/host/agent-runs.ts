import { isRunOfAgent, type RunRecord } from "@assemblyline-agents/core";
import type { OpenEveRuntime } from "@assemblyline-agents/runtime";
import { HttpError } from "./http.js";

/**
 * The run `runId` when it is a run of the host's agent (or of one of its subagents). A store shared
 * with other agents (one database) holds their runs too: each is answered exactly as an id no run has,
 * 404 with the same body, so a caller of this host learns nothing of it, not even that it exists.
 */
export async function requireAgentRun(runtime: OpenEveRuntime, runId: string): Promise<RunRecord> {
  const run = await runtime.state.runs.getRun(runId);
  if (run && isRunOfAgent(run, runtime.manifest.agent.id)) return run;
  throw unknownRun(runId);
}

/** The one answer to an unknown id and to another agent's run alike. */
function unknownRun(runId: string): HttpError {
  return new HttpError(404, "AL_ERR_RUN_NOT_FOUND", `no run ${runId} of this agent`, { fix: "List this agent's runs with GET /runs (or `assembly-line runs list`)." });
}
